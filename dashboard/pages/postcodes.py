"""Postcodes page: population per postcode area and k-map style risk on a map (filled by the postcodes feature)."""

from __future__ import annotations

from typing import Any

import dash
from dash import Dash, html

from dashboard.ui.components import coming_soon
from dashboard.ui.pagestate import state_from_query, state_store
from dashboard.ui.services import Services

PATH = "/postcodes"
NAME = "Postcodes"


def layout(services: Services, **query: Any) -> Any:
    """A short note on what the page will do; the view state passes through unchanged."""
    state, _ = state_from_query(query)
    return html.Div(
        [
            coming_soon(
                "Postcodes",
                "See how many people live in each postcode area, which areas are too small to publish, and "
                "which coarser areas to merge them into, on an offline map. This page is being built.",
            ),
            state_store(state),
        ]
    )


def register(app: Dash, services: Services) -> None:
    dash.register_page(
        __name__,
        path=PATH,
        name=NAME,
        title="privdash · Postcodes",
        order=3,
        layout=lambda **q: layout(services, **q),
    )
