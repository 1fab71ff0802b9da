"""Charts shared by the pages (plotly figures in the dashboard's template), built from the application's plain data,
and :func:`chart`, the accessible frame every chart of the dashboard sits in.

A plot says what it says in colour and shape, which a screen reader cannot read and which some users cannot tell
apart. So each chart is a ``<figure>`` whose caption gives its title and a short summary, followed by a collapsed
table of the plotted numbers (WCAG 2.1 success criteria 1.1.1 and 1.4.1). The table is written in the browser
from the figure the graph shows (``assets/clientside.js``), so it follows every update of the figure, also the
partial ones (a ``Patch``), without a second callback.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import dash_mantine_components as dmc
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from dash import html

from dashboard.ui.theme import COLORS, figure

__all__ = ["BELOW_K", "SIZE_COLUMNS", "chart", "size_histogram"]

#: The status text of a class-size bar below the target k (hover, table of numbers).
BELOW_K = "below k"


def chart(
    graph: Any,
    *,
    title: str,
    summary: str,
    columns: Sequence[tuple[str, str]] | None = None,
    title_visible: bool = True,
    modebar: Sequence[str] = ("toImage", "resetScale2d"),
) -> Any:
    """``graph`` (a ``dcc.Graph`` with an id) as a figure: caption, the plot, and its numbers in a ``<details>``.

    Parameters
    ----------
    title
        The chart's title: the start of the caption (its accessible name) and of the table's caption.
    summary
        One or two sentences: what the chart shows and how to read it.
    title_visible
        False when a heading right above (a card's title) already shows the title: it is then read by screen
        readers only.
    columns
        The table's columns as (trace field, header) pairs; fields are ``x``, ``y``, ``z``, ``locations``, ``text``,
        ``name`` and ``customdata.<i>`` (``customdata`` for a flat list). By default: the series name when there
        are several, then x and y headed by the axis titles (a map: ``locations`` and ``z``).
    modebar
        The buttons of plotly's mode bar (``graph.config["modeBarButtons"]``). Each is a stop of the Tab key, and
        plotly's default set has ten, among them "Share chart", which uploads the figure to Plotly's cloud: the
        default keeps the PNG download and the reset of a mouse zoom (a map: its zoom buttons).
    """
    graph_id = str(graph.id)
    graph.config = {**(getattr(graph, "config", None) or {}), "modeBarButtons": [list(modebar)]}
    heading_class = "chart-title" if title_visible else "chart-title visually-hidden"
    caption = [
        dmc.Text(title, fw=600, size="sm", className=heading_class, id=f"{graph_id}-title"),
        dmc.Text(summary, size="xs", c="dimmed", className="chart-summary"),
    ]
    data_props: dict[str, Any] = {"data-graph": graph_id, "data-title": title}
    if columns:
        data_props["data-columns"] = json.dumps([list(pair) for pair in columns])
    return html.Figure(
        [
            html.Figcaption(caption),
            graph,
            html.Details(
                [html.Summary("Show the numbers as a table"), html.Div(className="chart-data", **data_props)],
                className="chart-numbers",
            ),
        ],
        className="chart",
        id=f"{graph_id}-figure",
    )


def size_histogram(binned: pd.DataFrame, k_target: int) -> go.Figure:
    """Bars of the number of classes per size bin (:func:`privdash.application.riskview.size_bins`); bars below
    the k target are dark red *and* hatched, and say "below k" (status never by colour alone)."""
    below = (binned["low"] < k_target).to_numpy()
    colors = [COLORS["danger"] if low else COLORS["primary"] for low in below]
    status = np.where(below, BELOW_K, "")
    fig = figure(
        go.Bar(
            x=binned["label"],
            y=binned["classes"],
            marker={"color": colors, "pattern": {"shape": ["/" if low else "" for low in below], "solidity": 0.3}},
            # An object array keeps the record counts numbers (formatted with thousands separators in the hover).
            customdata=np.column_stack([binned["records"].to_numpy().astype(object), status.astype(object)])
            if len(binned)
            else None,
            hovertemplate="size %{x}: %{y:,} classes, %{customdata[0]:,} records %{customdata[1]}<extra></extra>",
        ),
        xaxis_title="class size",
        yaxis_title="classes",
        height=300,
    )
    # Every bin keeps its label (plotly would drop every other one when they crowd), standing on end when there are
    # many, with the room below the plot that the template's margin does not give ("1,001–10,000" stays whole).
    fig.update_xaxes(type="category", dtick=1, tickangle=-90 if len(binned) > 8 else None, automargin=True)
    return fig


#: The table columns of :func:`size_histogram` (for :func:`chart`).
SIZE_COLUMNS = (("x", "class size"), ("y", "classes"), ("customdata.0", "records"), ("customdata.1", "status"))
