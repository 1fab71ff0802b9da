/* Presenter's mode (dashboard/pages/present.py): step through the slides in the browser, without a round trip.
 *
 * Every slide is in the page; one is shown (the others carry the "hidden" attribute). The Previous and Next
 * buttons, the arrow keys, Page Up / Page Down, Home and End step; Escape follows the Exit link. Each step moves
 * the focus to the slide's heading, writes the counter ("3 of 6", announced by its aria-live region) and keeps the
 * slide in the address as #slide-3 (so that a reload stays on it). Up, Down, Page Up and Page Down scroll the page
 * first when it is taller than the window (a zoomed page), and step once it cannot scroll further; Left and Right
 * scroll a focused table that is wider than its box. Keys typed into a field, or with Alt, Ctrl or Meta, are left
 * alone. Inert on every other page.
 */
(function () {
    "use strict";

    function root() {
        return document.querySelector(".presenter");
    }

    function slides(presenter) {
        return Array.prototype.slice.call(presenter.querySelectorAll(".presenter-slide"));
    }

    function current(list) {
        for (var i = 0; i < list.length; i += 1) {
            if (!list[i].hidden) {
                return i;
            }
        }
        return 0;
    }

    function show(presenter, index, focus) {
        var list = slides(presenter);
        if (!list.length) {
            return;
        }
        index = Math.max(0, Math.min(list.length - 1, index));
        list.forEach(function (slide, i) {
            slide.hidden = i !== index;
        });
        var counter = presenter.querySelector(".presenter-counter");
        var text = (index + 1) + " of " + list.length;
        if (counter && counter.textContent !== text) {
            counter.textContent = text;
        }
        var previous = presenter.querySelector(".presenter-step[data-step='-1']");
        var next = presenter.querySelector(".presenter-step[data-step='1']");
        if (previous) {
            previous.disabled = index === 0;
        }
        if (next) {
            next.disabled = index === list.length - 1;
        }
        if (window.history && window.history.replaceState) {
            var hash = index ? "#slide-" + (index + 1) : "";
            if (window.location.hash !== hash) {
                window.history.replaceState(window.history.state, "", window.location.pathname + window.location.search + hash);
            }
        }
        if (focus) {
            var heading = list[index].querySelector(".presenter-title");
            if (heading) {
                heading.focus();
            }
        }
    }

    function canScroll(down) {
        var page = document.scrollingElement || document.documentElement;
        return down ? page.scrollTop + page.clientHeight < page.scrollHeight - 1 : page.scrollTop > 0;
    }

    document.addEventListener("keydown", function (event) {
        var presenter = root();
        if (!presenter || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) {
            return;
        }
        var target = event.target;
        if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
            return;
        }
        // A table box that scrolls sideways keeps the left and right arrows for itself.
        var sideways = target && target.classList && target.classList.contains("presenter-table-box") &&
            target.scrollWidth > target.clientWidth + 1;
        if (sideways && (event.key === "ArrowLeft" || event.key === "ArrowRight")) {
            return;
        }
        var list = slides(presenter);
        var index = current(list);
        var next = null;
        switch (event.key) {
        case "ArrowRight":
            next = index + 1;
            break;
        case "ArrowLeft":
            next = index - 1;
            break;
        case "ArrowDown":
        case "PageDown":
            next = canScroll(true) ? null : index + 1;
            break;
        case "ArrowUp":
        case "PageUp":
            next = canScroll(false) ? null : index - 1;
            break;
        case "Home":
            next = 0;
            break;
        case "End":
            next = list.length - 1;
            break;
        case "Escape":
            var exit = presenter.querySelector(".presenter-exit");
            if (exit) {
                event.preventDefault();
                exit.click();
            }
            return;
        default:
            return;
        }
        if (next === null) {
            return;
        }
        event.preventDefault();
        show(presenter, next, true);
    });

    document.addEventListener("click", function (event) {
        var button = event.target && event.target.closest ? event.target.closest(".presenter-step") : null;
        var presenter = button ? root() : null;
        if (!presenter || button.disabled) {
            return;
        }
        show(presenter, current(slides(presenter)) + Number(button.getAttribute("data-step")), true);
    });

    /* A presenter that appears (the page is rendered after the script loads) opens on the slide of the address and
     * takes the focus on its heading. */
    function start() {
        var presenter = root();
        if (!presenter || presenter.getAttribute("data-started")) {
            return;
        }
        presenter.setAttribute("data-started", "true");
        var match = /^#slide-(\d+)$/.exec(window.location.hash);
        show(presenter, match ? Number(match[1]) - 1 : 0, true);
    }

    new MutationObserver(start).observe(document.documentElement, {childList: true, subtree: true});
    document.addEventListener("DOMContentLoaded", start);
}());
