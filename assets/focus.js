/* Focus that follows a link to its result.
 *
 * A link with ``data-focus-next="<selector>"`` (the Data page's "Check the risk" link) asks for the focus to be put
 * on the first element matching the selector on the page it opens (the Risk page's verdict), as soon as that element
 * is shown: a keyboard or screen-reader user continues from the result instead of from the top of the page. The
 * element gets tabindex="-1" (the script can focus it; it is no extra stop of the Tab key). The wish is kept in the
 * tab's sessionStorage (the link may reload the page), is for the link's own page only, is dropped once the focus is
 * there or after a minute, and never takes the focus from an element the user has already moved it to. For a few
 * seconds after landing, a re-render of the new page that drops the focus to the page gets it put back.
 * No code is built from strings: the app's Content-Security-Policy forbids eval.
 */
(function () {
    "use strict";

    var KEY = "privdash-focus-next";
    var LIFETIME_MS = 60000;
    var HOLD_MS = 3000;
    var POLL_MS = 100;
    var LOADING = "[data-dash-is-loading='true']";
    var landed = null;
    var timer = null;

    function wish() {
        try {
            return JSON.parse(window.sessionStorage.getItem(KEY) || "null");
        } catch (err) {
            return null;
        }
    }

    function forget() {
        try {
            window.sessionStorage.removeItem(KEY);
        } catch (err) {
            /* storage blocked: nothing was kept */
        }
    }

    function shown(element) {
        if (!element.getClientRects().length) {
            return false;
        }
        return element.checkVisibility ? element.checkVisibility({visibilityProperty: true}) : true;
    }

    /* Nothing focused yet on the new page (the link itself keeps the focus until its page is replaced). */
    function idle() {
        var active = document.activeElement;
        return !active || active === document.body || active === document.documentElement ||
            !!(active.closest && active.closest("a[data-focus-next]"));
    }

    /* One try: true when there is nothing more to do. */
    function land() {
        var wanted = wish();
        if (!wanted || !wanted.selector) {
            return true;
        }
        if (Date.now() > wanted.until) {
            forget();
            return true;
        }
        if (window.location.pathname !== wanted.path) {
            return false;
        }
        if (!idle()) {
            forget();  // the user has moved on: the result does not take the focus from them
            return true;
        }
        var target;
        try {
            target = document.querySelector(wanted.selector);
        } catch (err) {
            forget();
            return true;
        }
        // While a callback runs its output may be hidden (a loading spinner), where focus() does nothing.
        if (!target || !shown(target) || target.closest(LOADING)) {
            return false;
        }
        if (!target.hasAttribute("tabindex")) {
            target.setAttribute("tabindex", "-1");
        }
        target.focus();
        if (document.activeElement !== target) {
            return false;
        }
        forget();
        landed = {target: target, until: Date.now() + HOLD_MS};
        return true;
    }

    /* After landing: a re-render that drops the focus to the page gets it put back. */
    function hold() {
        if (!landed || Date.now() > landed.until || !landed.target.isConnected) {
            landed = null;
            return true;
        }
        var active = document.activeElement;
        if ((!active || active === document.body) && shown(landed.target) && !landed.target.closest(LOADING)) {
            landed.target.focus();
        }
        return false;
    }

    function tick() {
        var done = land();
        var held = hold();
        if (done && held && landed === null) {
            window.clearInterval(timer);
            timer = null;
        }
    }

    function watch() {
        if (timer === null) {
            timer = window.setInterval(tick, POLL_MS);
        }
    }

    document.addEventListener("click", function (event) {
        var link = event.target && event.target.closest ? event.target.closest("a[data-focus-next]") : null;
        if (!link) {
            return;
        }
        try {
            window.sessionStorage.setItem(KEY, JSON.stringify({
                selector: link.getAttribute("data-focus-next"),
                path: new URL(link.href, window.location.href).pathname,
                until: Date.now() + LIFETIME_MS
            }));
        } catch (err) {
            return;  // storage blocked: the focus stays where the browser puts it
        }
        watch();
    }, true);

    if (wish()) {
        watch();
    }
})();
