"""Fix page: generalisation, suppression and microaggregation previews (filled by the fixes feature)."""

from __future__ import annotations

from typing import Any

import dash
from dash import Dash, html

from dashboard.ui.components import coming_soon
from dashboard.ui.pagestate import state_from_query, state_store
from dashboard.ui.services import Services

PATH = "/fix"
NAME = "Fix"


def layout(services: Services, **query: Any) -> Any:
    """A short note on what the page will do; the view state passes through unchanged."""
    state, _ = state_from_query(query)
    return html.Div(
        [
            coming_soon(
                "Fix",
                "Try generalisation, suppression and microaggregation on the quasi-identifiers and see the risk "
                "and the information lost before exporting. This page is being built.",
            ),
            state_store(state),
        ]
    )


def register(app: Dash, services: Services) -> None:
    dash.register_page(
        __name__, path=PATH, name=NAME, title="privdash · Fix", order=2, layout=lambda **q: layout(services, **q)
    )
