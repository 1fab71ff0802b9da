"""Charts shared by the pages (plotly figures in the dashboard's template), built from the application's plain data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.ui.theme import COLORS, figure

__all__ = ["size_histogram"]


def size_histogram(binned: pd.DataFrame, k_target: int) -> go.Figure:
    """Bars of the number of classes per size bin (:func:`dashboard.application.riskview.size_bins`), red below the
    k target."""
    colors = [COLORS["danger"] if low < k_target else COLORS["primary"] for low in binned["low"]]
    fig = figure(
        go.Bar(
            x=binned["label"],
            y=binned["classes"],
            marker_color=colors,
            customdata=np.stack([binned["records"]], axis=-1) if len(binned) else None,
            hovertemplate="size %{x}: %{y:,} classes, %{customdata[0]:,} records<extra></extra>",
        ),
        xaxis_title="class size",
        yaxis_title="classes",
        height=300,
    )
    fig.update_xaxes(type="category")
    return fig
