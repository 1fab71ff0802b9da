/* Client-side callbacks of the shell: the share link and copying it. */
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
        }
    }
});
