/* File upload for the Data page.
 *
 * The file goes to the server as multipart/form-data (POST /api/upload), never through a Dash callback, so it is
 * not base64-encoded in the browser or re-sent with later callbacks. Files over the limit are refused here, before
 * any byte is sent. Progress and the outcome are handed to Dash with dash_clientside.set_props:
 *   upload-progress   (value, 0-100)      upload-status (children: a short status line)
 *   upload-controls   (style: shown while a transfer runs)
 *   upload-result     (data: {id, href} on success, {error} or {too_large: {filename, size}} otherwise)
 * The server answers every refused file with {error: message} and a 4xx status (bad file, reading limit, quota).
 */
(function () {
    "use strict";
    var current = null;

    function setProps(id, props) {
        if (window.dash_clientside && window.dash_clientside.set_props) {
            window.dash_clientside.set_props(id, props);
        }
    }

    function finish(result) {
        current = null;
        setProps("upload-controls", {style: {display: "none"}});
        result.nonce = Date.now();
        setProps("upload-result", {data: result});
    }

    function send(file, zone) {
        var limit = Number(zone.getAttribute("data-max-bytes") || "0");
        if (limit > 0 && file.size > limit) {
            finish({too_large: {filename: file.name, size: file.size}});
            return;
        }
        if (current) {
            current.abort();
        }
        var form = new FormData();
        form.append("file", file, file.name);
        // The view's targets carry over to the new dataset: the state is in the URL (s) or kept on the server (l).
        var query = new URLSearchParams(window.location.search);
        ["s", "l"].forEach(function (key) {
            var value = query.get(key);
            if (value) {
                form.append(key, value);
            }
        });
        var xhr = new XMLHttpRequest();
        current = xhr;
        setProps("upload-controls", {style: {display: "block"}});
        setProps("upload-progress", {value: 0});
        setProps("upload-status", {children: "Sending " + file.name + " ..."});
        xhr.upload.onprogress = function (event) {
            if (event.lengthComputable) {
                var pct = Math.round((100 * event.loaded) / event.total);
                setProps("upload-progress", {value: pct});
                if (pct >= 100) {
                    setProps("upload-status", {children: "Reading " + file.name + " on the server ..."});
                }
            }
        };
        xhr.onload = function () {
            var body = null;
            try {
                body = JSON.parse(xhr.responseText);
            } catch (err) {
                body = null;
            }
            if (body && (body.id || body.error)) {
                finish(body);
            } else if (xhr.status === 413) {
                finish({too_large: {filename: file.name, size: file.size}});
            } else {
                finish({error: "The server could not take the file (HTTP " + xhr.status + "). Try again."});
            }
        };
        xhr.onerror = function () {
            finish({error: "The upload was interrupted: the server could not be reached."});
        };
        xhr.onabort = function () {
            finish({error: "Upload cancelled."});
        };
        xhr.open("POST", zone.getAttribute("data-upload-url") || "/api/upload");
        xhr.send(form);
    }

    function zoneOf(element) {
        return element && element.closest ? element.closest(".upload-zone") : null;
    }

    /* One hidden file input outside the React tree; a click on the zone opens its file dialog. */
    var activeZone = null;
    function fileInput() {
        var input = document.getElementById("upload-input");
        if (!input) {
            input = document.createElement("input");
            input.type = "file";
            input.id = "upload-input";
            input.style.display = "none";
            document.body.appendChild(input);
        }
        return input;
    }

    document.addEventListener("click", function (event) {
        var zone = zoneOf(event.target);
        if (!zone) {
            return;
        }
        activeZone = zone;
        var input = fileInput();
        input.accept = zone.getAttribute("data-accept") || "";
        input.click();
    });
    document.addEventListener("keydown", function (event) {
        var zone = zoneOf(event.target);
        if (zone && (event.key === "Enter" || event.key === " ")) {
            event.preventDefault();
            zone.click();
        }
    });

    document.addEventListener("change", function (event) {
        var input = event.target;
        if (!input || input.id !== "upload-input" || !input.files || !input.files.length) {
            return;
        }
        var file = input.files[0];
        send(file, activeZone || document.querySelector(".upload-zone"));
        input.value = "";
    });

    document.addEventListener("click", function (event) {
        if (event.target && event.target.closest && event.target.closest("#upload-cancel") && current) {
            current.abort();
        }
    });

    ["dragenter", "dragover"].forEach(function (name) {
        document.addEventListener(name, function (event) {
            var zone = zoneOf(event.target);
            if (zone) {
                event.preventDefault();
                zone.classList.add("upload-zone-active");
            }
        });
    });
    document.addEventListener("dragleave", function (event) {
        var zone = zoneOf(event.target);
        if (zone) {
            zone.classList.remove("upload-zone-active");
        }
    });
    document.addEventListener("drop", function (event) {
        var zone = zoneOf(event.target);
        if (!zone) {
            return;
        }
        event.preventDefault();
        zone.classList.remove("upload-zone-active");
        var files = event.dataTransfer && event.dataTransfer.files;
        if (files && files.length) {
            send(files[0], zone);
        }
    });
})();
