"""Presenter's mode: the open dataset's story (or a presentation's) for a projector, one slide at a time.

``/present?s=<state>&from=<page>`` shows the deck of :func:`privdash.application.presenter.deck`: six slides in large
type (the table, who is unique and why, the verdict, the cheapest fix, what the attacks measure before and after,
the released sample). All slides are in the page; one is shown. Stepping is done in the browser by
``assets/presenter.js`` (no round trip): the Previous and Next buttons, the arrow keys, Page Up / Page Down, Home and
End; Escape follows the Exit link back to the page named by ``from`` (one of the navigation's pages). Each step moves
the focus to the slide's heading and the counter ("3 of 6") is announced to screen readers; the address keeps the
slide as ``#slide-3`` so that a reload stays on it. The shell's header and navigation are hidden while the presenter
is on screen (``assets/privdash.css``, ``.presenter``).

The slides that take time (the fix, the attacks, the sample) are computed by a background job started when the page
opens, unless an earlier run kept them (:func:`~privdash.application.presenter.compute_slow`); until then they say
so, and they fill in when the job ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import dash
from dash import ALL, Dash, Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from dashboard.ui.components import NAV_ITEMS, error_alert, no_dataset, progress_panel
from dashboard.ui.pagestate import open_page, state_from_store
from privdash.application.presenter import SLIDE_KEYS, Deck, Slide, SlideBars, SlideTable, compute_slow, deck
from privdash.application.services import Services
from privdash.application.state import ViewState
from privdash.errors import PrivdashError

__all__ = ["EXIT_DEFAULT", "FROM_KEY", "layout", "present_href", "register", "slide_body"]

PATH = "/present"
NAME = "Present"
#: The query parameter naming the page the Exit link goes back to.
FROM_KEY = "from"
#: Where Exit goes when the link names no page (or one that is not a page of the navigation).
EXIT_DEFAULT = "/risk"
#: The id type of the bodies of pending slides (the background job's outputs).
PENDING = "present-pending"
_PAGES = frozenset(path for path, _label, _description in NAV_ITEMS if path != PATH)


def present_href(services: Services, state: ViewState, came_from: str | None = None) -> str:
    """The link to the presenter's mode of ``state``, with the page its Exit link goes back to."""
    search = services.links.search(state)
    if came_from in _PAGES:
        search += ("&" if search else "?") + urlencode({FROM_KEY: came_from})
    return PATH + search


def _attributes(values: dict[str, str]) -> dict[str, Any]:
    """ARIA and data attributes for an html component (typed as the keyword arguments they are)."""
    return dict(values)


# --- slides ------------------------------------------------------------------------------------------------------


def _table(table: SlideTable) -> Any:
    numeric = table.numeric or tuple(False for _ in table.columns)
    head = html.Thead(
        html.Tr(
            [
                html.Th(name, scope="col", className="presenter-number" if right else None)
                for name, right in zip(table.columns, numeric, strict=True)
            ]
        )
    )
    body = html.Tbody(
        [
            html.Tr(
                [
                    html.Td(cell, className="presenter-number" if right else None)
                    for cell, right in zip(row, numeric, strict=True)
                ]
            )
            for row in table.rows
        ]
    )
    return _box(html.Table([html.Caption(table.caption), head, body], className="presenter-table"), table.caption)


def _box(table: Any, caption: str) -> Any:
    """A table in a box that scrolls sideways when the table is wider than the window (a zoomed page); the box is a
    named region the keyboard can reach, so that it can be scrolled without a mouse."""
    return html.Div(
        table, className="presenter-table-box", tabIndex=0, role="region", **_attributes({"aria-label": caption})
    )


def _bars(bars: SlideBars) -> Any:
    """The bar chart as a table: one row per label, one cell per series, each a bar (drawn, hidden from screen
    readers) and its number (read)."""
    head = html.Thead(
        html.Tr([html.Th("", scope="col"), *[html.Th(name, scope="col") for name in bars.series]]),
    )
    rows = []
    for i, label in enumerate(bars.labels):
        cells: list[Any] = [html.Th(label, scope="row")]
        for s, _name in enumerate(bars.series):
            width = max(0.0, min(1.0, float(bars.values[s][i])))
            cells.append(
                html.Td(
                    [
                        html.Span(
                            html.Span(
                                className=f"presenter-fill presenter-fill-{s}", style={"width": f"{100 * width:.2f}%"}
                            ),
                            className="presenter-track",
                            **_attributes({"aria-hidden": "true"}),
                        ),
                        html.Span(bars.texts[s][i], className="presenter-bar-value"),
                    ]
                )
            )
        rows.append(html.Tr(cells))
    return _box(
        html.Table([html.Caption(bars.caption), head, html.Tbody(rows)], className="presenter-table presenter-bars"),
        bars.caption,
    )


def slide_body(slide: Slide) -> list[Any]:
    """What a slide shows below its heading: the big number or sentence, the sentence under it, its table or bars;
    or, while it is computed, a note that says so."""
    if slide.pending:
        return [
            html.P("Being computed …", className="presenter-headline presenter-pending"),
            html.P(
                "This slide fills in when the background computation ends; the other slides can be shown meanwhile.",
                className="presenter-detail",
            ),
        ]
    status = ""
    headline = slide.headline
    if slide.passed is not None:
        status = " presenter-pass" if slide.passed else " presenter-fail"
        headline = ("✓ " if slide.passed else "✗ ") + headline
    if slide.error:
        status = " presenter-fail"
    parts: list[Any] = [html.P(headline, className="presenter-headline" + status)]
    if slide.detail:
        parts.append(html.P(slide.detail, className="presenter-detail"))
    if slide.table is not None:
        parts.append(_table(slide.table))
    if slide.bars is not None:
        parts.append(_bars(slide.bars))
    return parts


def _section(slide: Slide, index: int) -> Any:
    return html.Section(
        [
            html.H2(slide.title, id=f"slide-{slide.key}-title", tabIndex=-1, className="presenter-title"),
            # A pending slide's body is an output of the background job (and only those: a job that is stopped
            # says so in them, and leaves the slides already shown as they are).
            html.Div(
                slide_body(slide),
                id={"type": PENDING if slide.pending else "present-body", "key": slide.key},
                className="presenter-body",
            ),
        ],
        id=f"slide-{slide.key}",
        className="presenter-slide",
        hidden=index > 0,
        **_attributes({"aria-roledescription": "slide", "aria-labelledby": f"slide-{slide.key}-title"}),
    )


def _controls(count: int) -> Any:
    return html.Nav(
        [
            html.Button(
                "← Previous",
                id="present-prev",
                disabled=True,
                className="presenter-step",
                **_attributes({"data-step": "-1"}),
            ),
            html.P(
                f"1 of {count}",
                id="present-counter",
                className="presenter-counter",
                **_attributes({"aria-live": "polite"}),
            ),
            html.Button(
                "Next →",
                id="present-next",
                disabled=count < 2,
                className="presenter-step",
                **_attributes({"data-step": "1"}),
            ),
        ],
        className="presenter-controls",
        **_attributes({"aria-label": "Slides"}),
    )


def presenter(current: Deck, exit_href: str) -> Any:
    """The presenter's view of a deck: its title bar with the Exit link, the slides (the first one shown), the
    step controls and the key help."""
    slides = current.slides
    return html.Div(
        [
            html.Div(
                [
                    html.H1(
                        [current.title, html.Span(" · presenter's mode", className="presenter-mode")],
                        className="presenter-deck-title",
                    ),
                    html.A("Exit", href=exit_href, id="present-exit", className="presenter-exit"),
                ],
                className="presenter-bar",
            ),
            *([html.P(current.story, className="presenter-story")] if current.story else []),
            html.Div([_section(slide, i) for i, slide in enumerate(slides)], className="presenter-slides"),
            _controls(len(slides)),
            html.P(
                "Keys: → or Page Down next, ← or Page Up previous, Home first, End last, Esc exit.",
                className="presenter-keys",
                id="present-keys",
            ),
        ],
        className="presenter",
        id="presenter",
    )


def _request(state: ViewState, current: Deck) -> dict[str, Any]:
    """What the background job computes: the view state of the deck, and which of its slides are pending."""
    return {"state": state.to_dict(), "slides": [slide.key for slide in current.slides if slide.pending]}


def _exit_href(services: Services, state: ViewState, came_from: Any) -> str:
    page = came_from if isinstance(came_from, str) and came_from in _PAGES else EXIT_DEFAULT
    return services.links.href(state, page)


def layout(services: Services, **query: Any) -> Any:
    """The presenter's mode of the state in ``query``; the slow slides are computed by a background job."""
    state, loaded, alerts = open_page(services, query)
    exit_href = _exit_href(services, state, query.get(FROM_KEY))
    if loaded is None:
        return html.Div(
            [html.H1("Presenter's mode"), *alerts, no_dataset(), html.A("Exit", href=exit_href, id="present-exit")],
            className="presenter presenter-empty",
        )
    try:
        current = deck(services, state)
    except PrivdashError as exc:
        return html.Div(
            [
                html.H1("Presenter's mode"),
                error_alert(str(exc), title="The story cannot be told", alert_id="present-error"),
                html.A("Exit", href=exit_href, id="present-exit"),
            ],
            className="presenter presenter-empty",
        )
    pending = current.pending
    return html.Div(
        [
            *alerts,
            presenter(current, exit_href),
            html.Div(
                progress_panel("present", label="Progress of the slides being computed"),
                id="present-running",
                className="presenter-progress",
                style={"display": "none"},
            ),
            html.Div(id="present-note", className="presenter-note"),
            # One tick starts the background job once (a request forwarded through a second store is sent twice).
            dcc.Interval(id="present-tick", interval=100, max_intervals=1 if pending else 0),
            dcc.Store(id="present-request", data=_request(state, current) if pending else None),
        ]
    )


def register(app: Dash, services: Services) -> None:
    dash.register_page(
        __name__,
        path=PATH,
        name=NAME,
        title="privdash · Present",
        order=4,
        layout=lambda **q: layout(services, **q),
    )

    @app.callback(
        Output({"type": PENDING, "key": ALL}, "children"),
        Input("present-tick", "n_intervals"),
        State("present-request", "data"),
        prevent_initial_call=True,
        background=True,
        progress=[Output("present-progress", "value"), Output("present-status", "children")],
        running=[(Output("present-running", "style"), {"display": "block"}, {"display": "none"})],
        cancel=[Input("present-cancel", "n_clicks"), Input("url", "pathname")],
        interval=500,
    )
    def slow_slides(set_progress: Callable[[tuple[int, str]], None], ticks: int | None, request: Any) -> Any:
        """Compute the slides that take time (in a background job), then show the pending slides' content (in
        page order)."""
        if not ticks or not isinstance(request, Mapping) or not isinstance(request.get("slides"), list):
            raise PreventUpdate
        keys = [key for key in SLIDE_KEYS if key in request["slides"]]
        state = state_from_store(request.get("state"))
        try:
            current = compute_slow(services, state, lambda percent, text: set_progress((percent, text)))
        except PrivdashError as exc:
            return [
                slide_body(Slide(key, "", "This part of the story cannot be shown", str(exc), error=True))
                for key in keys
            ]
        return [slide_body(current.slide(key)) for key in keys]

    @app.callback(
        Output("present-note", "children"),
        Input("present-cancel", "n_clicks"),
        prevent_initial_call=True,
    )
    def cancelled(_clicks: int | None) -> Any:
        return html.P(
            "The computation was cancelled: reload the page to compute the remaining slides.",
            id="present-cancelled",
            **_attributes({"aria-live": "polite"}),
        )
