/* Client-side callbacks of the shell (the share link, copying it, the share dialog's state) and the page-wide
 * keyboard and screen-reader helpers:
 *   - the skip link moves the focus to the main content without changing the address (the address is the share
 *     link);
 *   - a data grid is one stop of the Tab key: arrow keys move inside it, Tab and Shift+Tab leave it at once
 *     (AG Grid would otherwise move one cell per press, through thousands of rows);
 *   - file inputs that a component draws without a name get one (the text of their upload control), and a block
 *     of code too wide for its box can take the focus (so that the keyboard can scroll it);
 *   - the table of numbers under each chart (dashboard/ui/charts.py) is written from the plotted figure when it is
 *     opened, and again when the figure changes while it is open.
 * No code is built from strings: the app's Content-Security-Policy forbids eval.
 */
window.dash_clientside = Object.assign({}, window.dash_clientside, {
    privdash: {
        shareLink: function (opened) {
            return window.location.href;
        },
        copyLink: function (nClicks, link) {
            if (!nClicks) {
                return window.dash_clientside.no_update;
            }
            var text = link || window.location.href;
            function fallback() {
                var area = document.createElement("textarea");
                area.value = text;
                area.setAttribute("readonly", "");
                area.style.position = "absolute";
                area.style.left = "-9999px";
                document.body.appendChild(area);
                area.select();
                var ok = false;
                try {
                    ok = document.execCommand("copy");
                } catch (err) {
                    ok = false;
                }
                document.body.removeChild(area);
                return ok;
            }
            if (navigator.clipboard && window.isSecureContext) {
                return navigator.clipboard.writeText(text).then(
                    function () { return "Copied"; },
                    function () { return fallback() ? "Copied" : "Select the link and copy it"; }
                );
            }
            return fallback() ? "Copied" : "Select the link and copy it";
        },
        refreshGrid: function (version, gridId) {
            if (!version || !window.dash_ag_grid) {
                return window.dash_clientside.no_update;
            }
            window.dash_ag_grid.getApiAsync(gridId).then(function (api) {
                api.purgeInfiniteCache();
            }).catch(function () {});
            return window.dash_clientside.no_update;
        },
        /* aria-expanded of a button that opens a popover, from the popover's "opened". */
        expanded: function (opened) {
            return opened ? "true" : "false";
        },
        /* The navigation on a narrow screen: shown while the menu button is open. */
        navbar: function (opened, navbar) {
            var folded = Object.assign({}, navbar, {collapsed: {mobile: !opened, desktop: false}});
            return [folded, opened ? "true" : "false"];
        },
        /* Going to another page folds the menu again. */
        closeMenu: function (pathname) {
            return false;
        }
    }
});

(function () {
    "use strict";

    var MAIN_ID = "main-content";
    var TABBABLE = [
        "a[href]", "button:not([disabled])", "input:not([disabled]):not([type='hidden'])", "select:not([disabled])",
        "textarea:not([disabled])", "summary", "[tabindex]"
    ].join(",");
    var MAX_TABLE_ROWS = 1000;

    /* --- skip link ------------------------------------------------------------------------------------------- */

    document.addEventListener("click", function (event) {
        var link = event.target && event.target.closest ? event.target.closest(".skip-link") : null;
        var main = link ? document.getElementById(MAIN_ID) : null;
        if (main) {
            event.preventDefault();
            main.focus();
        }
    });

    /* --- grids: one tab stop ---------------------------------------------------------------------------------- */

    function isTabbable(element) {
        if (element.tabIndex < 0 || element.closest("[inert]") || !element.getClientRects().length) {
            return false;
        }
        if (window.getComputedStyle(element).visibility === "hidden") {
            return false;
        }
        // Of a group of radio buttons only the checked one is a stop (the first one when none is checked).
        if (element.type === "radio" && element.name && !element.checked) {
            var group = document.querySelectorAll("input[type='radio'][name='" + CSS.escape(element.name) + "']");
            var checked = Array.prototype.some.call(group, function (radio) { return radio.checked; });
            return !checked && group[0] === element;
        }
        return true;
    }

    /* The first stop after (or the last one before) ``container`` in document order. */
    function stopOutside(container, backwards) {
        var stops = Array.prototype.filter.call(document.querySelectorAll(TABBABLE), function (element) {
            return !container.contains(element) && isTabbable(element);
        });
        if (backwards) {
            for (var i = stops.length - 1; i >= 0; i -= 1) {
                if (container.compareDocumentPosition(stops[i]) & Node.DOCUMENT_POSITION_PRECEDING) {
                    return stops[i];
                }
            }
            return null;
        }
        for (var j = 0; j < stops.length; j += 1) {
            if (container.compareDocumentPosition(stops[j]) & Node.DOCUMENT_POSITION_FOLLOWING) {
                return stops[j];
            }
        }
        return null;
    }

    document.addEventListener("keydown", function (event) {
        if (event.key !== "Tab" || event.altKey || event.ctrlKey || event.metaKey) {
            return;
        }
        var active = document.activeElement;
        var grid = active && active.closest ? active.closest(".ag-root-wrapper") : null;
        // Anywhere in a grid (a cell, a header, the tab guards or the viewport that hold the focus for a moment
        // after Tab has entered it), Tab leaves it; inside a column menu or a cell editor, Tab stays theirs.
        if (!grid || active.closest(".ag-popup, .ag-menu, .ag-cell-inline-editing")) {
            return;
        }
        var target = stopOutside(grid, event.shiftKey);
        if (target) {
            event.preventDefault();
            event.stopPropagation();
            target.focus();
        }
    }, true);

    /* --- names and focus the components do not give ------------------------------------------------------------ */

    function labelFileInputs() {
        document.querySelectorAll("input[type='file']:not([aria-label]):not([aria-labelledby])").forEach(
            function (input) {
                var owner = input.parentElement && input.parentElement.closest("[id]");
                var text = owner ? owner.textContent.replace(/\s+/g, " ").trim() : "";
                input.setAttribute("aria-label", text || "Choose a file");
                // An upload drawn as a button opens its dialog from the button; the invisible input is no extra stop.
                if (owner && owner.querySelector("button, [role='button']")) {
                    input.setAttribute("tabindex", "-1");
                }
            }
        );
    }

    /* A block of code that scrolls sideways takes the focus, so that the keyboard can scroll it. */
    function focusableCode() {
        document.querySelectorAll("pre:not([tabindex])").forEach(function (block) {
            if (block.scrollWidth > block.clientWidth || block.scrollHeight > block.clientHeight) {
                block.setAttribute("tabindex", "0");
            }
        });
    }

    /* --- tables of numbers under the charts --------------------------------------------------------------------- */

    function axisTitle(layout, axisId, letter) {
        var name = letter + "axis" + (axisId && axisId.length > 1 ? axisId.slice(1) : "");
        var axis = layout && layout[name];
        var title = axis && axis.title;
        return (title && (title.text || (typeof title === "string" ? title : ""))) || letter;
    }

    function defaultColumns(gd) {
        var traces = gd.data || [];
        var first = traces[0] || {};
        var columns = [];
        if (traces.length > 1) {
            columns.push(["name", "series"]);
        }
        if (first.locations) {
            columns.push(["locations", "area"], ["z", "value"]);
        } else {
            columns.push(["x", axisTitle(gd.layout, first.xaxis, "x")], ["y", axisTitle(gd.layout, first.yaxis, "y")]);
        }
        return columns;
    }

    var TYPED = {
        i1: Int8Array, u1: Uint8Array, u1c: Uint8ClampedArray, i2: Int16Array, u2: Uint16Array,
        i4: Int32Array, u4: Uint32Array, f4: Float32Array, f8: Float64Array
    };

    /* A trace's array: plotly.py sends numpy arrays as {dtype, bdata (base64), shape}; a 2-d one becomes rows. */
    function arrayOf(trace, key) {
        var values = trace[key];
        if (!values || !values.bdata || !TYPED[values.dtype]) {
            return values;
        }
        var bytes = Uint8Array.from(window.atob(values.bdata), function (c) { return c.charCodeAt(0); });
        var flat = Array.from(new TYPED[values.dtype](bytes.buffer));
        var shape = String(values.shape || flat.length).split(",").map(Number);
        if (shape.length < 2) {
            return flat;
        }
        var rows = [];
        for (var i = 0; i < shape[0]; i += 1) {
            rows.push(flat.slice(i * shape[1], (i + 1) * shape[1]));
        }
        return rows;
    }

    /* The values of one table column in a trace, by point index (arrays decoded once per table). */
    function columnOf(trace, field) {
        if (field === "name") {
            return function () { return trace.name || ""; };
        }
        var parts = field.split(".");
        var values = arrayOf(trace, parts[0]);
        return function (index) {
            if (values === undefined || values === null) {
                return "";
            }
            if (typeof values === "string" || typeof values === "number") {
                return values;
            }
            var value = values[index];
            if (parts.length > 1 && value !== undefined && value !== null) {
                value = value[Number(parts[1])];
            }
            return value === undefined || value === null ? "" : value;
        };
    }

    function formatted(value) {
        if (typeof value === "number") {
            return Number.isInteger(value) ?
                value.toLocaleString("en") :
                value.toLocaleString("en", {maximumFractionDigits: 3});
        }
        return String(value);
    }

    function traceLength(trace) {
        var longest = 0;
        ["x", "y", "z", "locations"].forEach(function (key) {
            var values = arrayOf(trace, key);
            if (values && typeof values !== "string" && values.length > longest) {
                longest = values.length;
            }
        });
        return longest;
    }

    function fillTable(holder) {
        var wrapper = document.getElementById(holder.getAttribute("data-graph"));
        var gd = wrapper && (wrapper.classList.contains("js-plotly-plot") ?
            wrapper : wrapper.querySelector(".js-plotly-plot"));
        if (!gd || !gd.data) {
            holder.textContent = "The chart has no data yet.";
            return gd;
        }
        var spec = holder.getAttribute("data-columns");
        var columns = spec ? JSON.parse(spec) : defaultColumns(gd);
        var table = document.createElement("table");
        var head = table.createTHead().insertRow();
        columns.forEach(function (column) {
            var th = document.createElement("th");
            th.scope = "col";
            th.textContent = column[1];
            head.appendChild(th);
        });
        var body = table.createTBody();
        var total = 0;
        gd.data.forEach(function (trace) {
            var n = traceLength(trace);
            var cells = columns.map(function (column) { return columnOf(trace, column[0]); });
            for (var i = 0; i < n; i += 1) {
                total += 1;
                if (total > MAX_TABLE_ROWS) {
                    continue;
                }
                var row = body.insertRow();
                cells.forEach(function (cell) {
                    row.insertCell().textContent = formatted(cell(i));
                });
            }
        });
        var title = holder.getAttribute("data-title");
        var caption = table.createCaption();
        caption.textContent = (title ? title + ": " : "") + total.toLocaleString("en") + (total === 1 ? " row" : " rows") +
            (total > MAX_TABLE_ROWS ? ", the first " + MAX_TABLE_ROWS.toLocaleString("en") + " shown" : "");
        holder.replaceChildren(table);
        // A long table scrolls: it takes the focus so that the keyboard can scroll it.
        holder.setAttribute("tabindex", "0");
        holder.setAttribute("role", "region");
        holder.setAttribute("aria-label", "Numbers" + (title ? " of " + title : " of the chart"));
        return gd;
    }

    document.addEventListener("toggle", function (event) {
        var details = event.target;
        if (!details || !details.classList || !details.classList.contains("chart-numbers") || !details.open) {
            return;
        }
        var holder = details.querySelector(".chart-data");
        var gd = holder ? fillTable(holder) : null;
        if (gd && gd.on && !gd.__privdashTable) {
            gd.__privdashTable = true;
            gd.on("plotly_afterplot", function () {
                var figure = gd.closest("figure.chart");
                var open = figure && figure.querySelector("details.chart-numbers[open] .chart-data");
                if (open) {
                    fillTable(open);
                }
            });
        }
    }, true);

    /* --- run on every change of the page ------------------------------------------------------------------------ */

    var pending = false;
    function update() {
        pending = false;
        labelFileInputs();
        focusableCode();
    }
    function schedule() {
        if (!pending) {
            pending = true;
            window.requestAnimationFrame(update);
        }
    }
    function start() {
        new MutationObserver(schedule).observe(document.body, {childList: true, subtree: true});
        schedule();
    }
    if (document.readyState === "loading") {
        document.addEventListener("DOMContentLoaded", start);
    } else {
        start();
    }
})();
