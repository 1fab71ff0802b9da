"""Component builders shared by the pages: the app shell, cards, headline numbers, messages.

Builders are plain functions returning Dash components, so they are tested as data (no browser). The number formats
(``fmt_count``, ``fmt_number``, ``fmt_share``) live in :mod:`privdash.application.formats` and are re-exported here.

Accessibility (WCAG 2.1 AA)
    The shell starts with a skip link to the main content (:data:`MAIN_ID`), has header, navigation and main
    landmarks and the page title as the one ``<h1>``; card titles are ``<h2>``. The share control is a dialog: the
    button says it opens one and whether it is open (``aria-haspopup``, ``aria-expanded``, set by the shell's
    callback), focus moves into the dialog and back to the button, Escape closes it. Verdict badges say "pass" or
    "fail" with a sign beside the colour. Colours: :mod:`dashboard.ui.theme`; focus rings and the rest:
    ``assets/privdash.css`` and ``assets/clientside.js``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import dash_mantine_components as dmc
from dash import dcc, html

from dashboard.ui.theme import THEME
from privdash.application.formats import fmt_count, fmt_number, fmt_share, in_people

if TYPE_CHECKING:
    from privdash.measure.verdict import Verdict

__all__ = [
    "MAIN_ID",
    "NAVBAR",
    "NAV_ITEMS",
    "card",
    "elapsed_progress",
    "error_alert",
    "fmt_count",
    "fmt_number",
    "fmt_share",
    "no_dataset",
    "page_title",
    "progress_panel",
    "shell",
    "stat_card",
    "verdict_banner",
]

#: Navigation entries: (path, label, one-line description). Pages register at these paths.
NAV_ITEMS: tuple[tuple[str, str, str], ...] = (
    ("/data", "Data", "Load a table, set column roles"),
    ("/risk", "Risk", "Classes, privacy models, re-identification"),
    ("/fix", "Fix", "Generalise, suppress, aggregate"),
    ("/postcodes", "Postcodes", "Population per postcode area"),
    ("/present", "Present", "The story, slide by slide, for a projector"),
)
#: The id of the ``<main>`` element, the target of the skip link.
MAIN_ID = "main-content"
#: The navigation column; below the ``sm`` breakpoint it is folded away until the menu button opens it.
NAVBAR: dict[str, Any] = {"width": 240, "breakpoint": "sm", "collapsed": {"mobile": True, "desktop": False}}

#: The shell's copy of the sign-off fields (:mod:`dashboard.ui.project` writes it, the report reads it).
SIGNOFF_STORE = "signoff-fields"

# --- shell -------------------------------------------------------------------------------------------------------


def shell(page_container: Any) -> Any:
    """The app shell: header (title, dataset name, share), left navigation, and the page container."""
    header = dmc.AppShellHeader(
        dmc.Group(
            [
                dmc.Group(
                    [
                        # On a narrow screen (a phone, or a page zoomed to 400 %) the navigation folds into a menu.
                        dmc.Burger(
                            id="nav-burger",
                            opened=False,
                            hiddenFrom="sm",
                            size="sm",
                            **{"aria-label": "Pages", "aria-expanded": "false", "aria-controls": "nav-pages"},
                        ),
                        dmc.Anchor(
                            dmc.Text("privdash", fw=700, size="xl", c="blue.8", span=True),
                            href="/data",
                            underline="never",
                        ),
                        dmc.Text("privacy risk diagnostics", size="sm", c="dimmed", visibleFrom="sm"),
                    ],
                    gap="sm",
                    wrap="nowrap",
                ),
                dmc.Group(
                    [
                        dmc.Badge(
                            "no dataset",
                            id="header-dataset",
                            size="lg",
                            color="gray",
                            variant="light",
                            maw={"base": 150, "sm": 420},
                        ),
                        share_control(),
                    ],
                    gap="sm",
                    wrap="nowrap",
                ),
            ],
            justify="space-between",
            h="100%",
            px="md",
            wrap="nowrap",
        )
    )
    navbar = dmc.AppShellNavbar(
        dmc.Stack(
            [
                dmc.NavLink(
                    id={"type": "nav", "path": path},
                    label=label,
                    description=description,
                    href=path,
                )
                for path, label, description in NAV_ITEMS
            ],
            gap=4,
        ),
        p="sm",
        id="nav-pages",
        **{"aria-label": "Pages"},
    )
    return dmc.MantineProvider(
        [
            # The first stop of the Tab key: past the header and the navigation (assets/clientside.js moves the focus
            # without changing the address, which is the share link).
            html.A("Skip to main content", href=f"#{MAIN_ID}", className="skip-link", id="skip-link"),
            dcc.Location(id="url", refresh=False),
            dcc.Location(id="redirect", refresh="callback-nav"),
            # The sign-off fields of the Data page's project section, kept in this browser for every page (the
            # Fix page's report prints them in its sign-off block).
            dcc.Store(id=SIGNOFF_STORE, storage_type="local"),
            dmc.AppShell(
                [header, navbar, dmc.AppShellMain(page_container, id=MAIN_ID, tabIndex=-1)],
                header={"height": 60},
                navbar=NAVBAR,
                padding="lg",
                id="app-shell",
            ),
        ],
        id="mantine-provider",
        theme=THEME,
        forceColorScheme="light",
    )


def share_control() -> Any:
    """The share button: a dialog with the current link, a copy button and what the link reveals.

    Mantine's own roles would put ``aria-haspopup`` and ``aria-expanded`` on the wrapper around the button, where
    they are not allowed (``withRoles=False``); the button carries them instead and the dropdown is the dialog.
    Opening moves the focus to the link field and keeps it in the dialog; Escape or a click outside closes it and
    the focus returns to the button.
    """
    return dmc.Popover(
        [
            dmc.PopoverTarget(
                dmc.Button(
                    "Share",
                    id="share-button",
                    variant="filled",
                    size="sm",
                    **{"aria-haspopup": "dialog", "aria-expanded": "false"},
                )
            ),
            dmc.PopoverDropdown(
                dmc.Stack(
                    [
                        dmc.Text("Link to this view", fw=600, size="sm", id="share-title"),
                        dmc.TextInput(
                            id="share-link", readOnly=True, w=420, size="xs", **{"aria-labelledby": "share-title"}
                        ),
                        dmc.Group(
                            [
                                dmc.Button("Copy link", id="copy-link", size="xs", variant="light"),
                                # Announced by screen readers when it changes ("Copied").
                                dmc.Text("", id="copy-status", size="xs", c="dimmed", **{"aria-live": "polite"}),
                            ]
                        ),
                        dmc.Text(
                            "The link carries the dataset id, column roles and settings, never data values. "
                            "Anyone with the link can open this dataset until it expires.",
                            size="xs",
                            c="dimmed",
                            maw=420,
                        ),
                    ],
                    gap="xs",
                )
            ),
        ],
        position="bottom-end",
        withArrow=True,
        shadow="md",
        id="share-popover",
        withRoles=False,
        trapFocus=True,
        returnFocus=True,
        closeOnEscape=True,
        attributes={"dropdown": {"role": "dialog", "aria-labelledby": "share-title"}},
    )


# --- building blocks ---------------------------------------------------------------------------------------------


def page_title(title: str, description: str | None = None) -> Any:
    """The title block at the top of a page: the page's one ``<h1>`` (drawn at the size of an ``<h2>``)."""
    children: list[Any] = [dmc.Title(title, order=1, size="h2")]
    if description:
        children.append(dmc.Text(description, c="dimmed", size="sm"))
    return dmc.Stack(children, gap=2, mb="md")


def card(title: str | None, *children: Any, description: str | None = None, **props: Any) -> Any:
    """A bordered card with an optional title (an ``<h2>``, for navigation by headings) and description."""
    head: list[Any] = []
    if title:
        head.append(dmc.Title(title, order=2, fz="md", fw=600, className="card-title"))
    if description:
        head.append(dmc.Text(description, size="xs", c="dimmed"))
    body = [dmc.Stack(head, gap=0, mb="sm")] if head else []
    return dmc.Card([*body, *children], **props)


def stat_card(
    label: str,
    value: str,
    *,
    passed: bool | None = None,
    detail: str | None = None,
    card_id: str | None = None,
) -> Any:
    """A headline number with an optional pass / fail badge against its target and a detail line.

    The badge's word and sign (✓ / ✗) carry the verdict; the colour only repeats it.
    """
    badge = None
    if passed is not None:
        badge = dmc.Badge(
            "pass" if passed else "fail",
            color="green" if passed else "red",
            variant="filled",
            size="sm",
            className="stat-status",
            style={"flexShrink": 0},
            # privdash.css draws a sign (✓ / ✗) before the word, hidden from screen readers (they read the word).
            **{"data-verdict": "pass" if passed else "fail"},
        )
    props: dict[str, Any] = {"padding": "md", "className": "stat-card"}
    if card_id:
        props["id"] = card_id
    return dmc.Card(
        [
            # The badge keeps its place at the top right on every card; a long label wraps instead of pushing it
            # onto a line of its own on some cards and not on others.
            dmc.Group(
                [dmc.Text(label, size="sm", c="dimmed", fw=500, className="stat-label", style={"minWidth": 0}), badge],
                justify="space-between",
                align="flex-start",
                gap="xs",
                wrap="nowrap",
            ),
            dmc.Text(value, fz=28, fw=700, className="stat-value"),
            dmc.Text(detail or "", size="xs", c="dimmed", className="stat-detail"),
        ],
        **props,
    )


def verdict_banner(
    verdict: Verdict, fix: str | None = None, *, banner_id: str = "verdict", people: bool = False
) -> Any:
    """The decision first: the core's verdict in one sentence and its status, in words as well as in colour; ``fix``
    adds what the least-lossy search found (the Fix page). ``people``: the diagnosis counts people (a column has the
    person-id role), and the sentence says people where the core says records, as the report and the CLI do."""
    title = "Meets every target" if verdict.passed else "Not safe to release"
    sentence = verdict.sentence()
    children: list[Any] = [dmc.Text(in_people(sentence) if people else sentence, size="sm")]
    if fix:
        children.append(dmc.Text(fix, size="sm", mt=4, className="verdict-fix"))
    return dmc.Alert(
        children,
        title=f"{'PASS' if verdict.passed else 'FAIL'}: {title}",
        color="green" if verdict.passed else "red",
        variant="light",
        id=banner_id,
        **{"data-status": verdict.status},
    )


def error_alert(message: str, *, title: str = "Something is wrong with the input", alert_id: str | None = None) -> Any:
    """A red message box for a user-caused error (the text comes from the core's exception)."""
    props: dict[str, Any] = {"title": title, "color": "red", "variant": "light", "className": "error-message"}
    if alert_id:
        props["id"] = alert_id
    return dmc.Alert(message, **props)


def no_dataset(message: str | None = None, *, on_data_page: bool = False) -> Any:
    """What a page shows without a dataset: a pointer to the Data page, or, on the Data page itself, to its
    controls."""
    pointer: Any = (
        dmc.Text("Pick a built-in dataset or upload a file with the controls on the left.", id="no-dataset-hint")
        if on_data_page
        else dmc.Anchor("Open the Data page to pick a built-in dataset or upload a file.", href="/data")
    )
    return dmc.Alert(
        [dmc.Text(message or "No dataset is open."), pointer],
        title="No data yet",
        color="blue",
        variant="light",
    )


def progress_panel(
    prefix: str, *, status: str = "Waiting ...", dimmed: bool = True, label: str = "Progress of the computation"
) -> Any:
    """Progress bar, status line and cancel button of a background job: ids ``<prefix>-progress``,
    ``<prefix>-status`` and ``<prefix>-cancel``. The bar is named ``label``; screen readers announce the status
    line as it changes."""
    text_props: dict[str, Any] = {"c": "dimmed"} if dimmed else {}
    return dmc.Stack(
        [
            dmc.Progress(
                id=f"{prefix}-progress",
                value=0,
                striped=True,
                animated=True,
                attributes={"section": {"aria-label": label}},
            ),
            dmc.Group(
                [
                    dmc.Text(status, id=f"{prefix}-status", size="sm", **text_props, **{"aria-live": "polite"}),
                    dmc.Button("Cancel", id=f"{prefix}-cancel", size="xs", variant="subtle", color="red"),
                ],
                justify="space-between",
            ),
        ],
        gap=4,
    )


@contextlib.contextmanager
def elapsed_progress(
    set_progress: Callable[[tuple[int, str]], None], text: str, *, every: float = 1.0, half_time: float = 15.0
) -> Iterator[None]:
    """Report a background step whose own progress is unknown (an engine counting a source): the status line says
    the seconds elapsed, and the bar moves towards 95% (half way after ``half_time`` seconds) so that the page is
    seen to be working; it is no estimate of the time left."""
    done = threading.Event()
    start = time.monotonic()

    def tick() -> None:
        while not done.wait(every):
            elapsed = time.monotonic() - start
            set_progress((int(95 * (1 - 0.5 ** (elapsed / half_time))), f"{text}: {elapsed:.0f} s ..."))

    set_progress((0, f"{text} ..."))
    thread = threading.Thread(target=tick, name="privdash-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(2 * every)


def scroll_table(label: str, table: Any, *, minWidth: int, maxHeight: int | None = None) -> Any:
    """``table`` (named ``label`` for screen readers) in a box of its own that scrolls when the page is narrower
    than ``minWidth`` (or the table taller than ``maxHeight``) pixels. The box takes the keyboard focus and is a
    named region, so that a keyboard user can scroll its hidden part (WCAG 2.1.1; axe's
    scrollable-region-focusable): Mantine's scroll container cannot."""
    style: dict[str, Any] = {"overflowX": "auto"}
    if maxHeight is not None:
        style |= {"maxHeight": f"{maxHeight}px", "overflowY": "auto"}
    named: dict[str, Any] = {"aria-label": label}
    return html.Div(
        html.Div(table, style={"minWidth": f"{minWidth}px"}),
        tabIndex="0",
        role="region",
        className="table-scroll",
        style=style,
        **named,
    )
