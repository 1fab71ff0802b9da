"""One look for the whole dashboard: the Mantine theme and the matching plotly template.

Everything is served by the app itself (Mantine's CSS is bundled with dash-mantine-components, plotly.js with
Dash); the font stack is the system's, so no font, stylesheet or script comes from the internet.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["COLORS", "PLOTLY_TEMPLATE", "THEME", "figure"]

FONT = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

COLORS = {
    "primary": "#1c7ed6",  # Mantine blue 7
    "danger": "#e03131",  # red 8
    "warning": "#f08c00",  # yellow 8
    "ok": "#2f9e44",  # green 8
    "muted": "#868e96",  # gray 6
    "grid": "#e9ecef",  # gray 2
    "text": "#212529",  # dark 8
}

THEME: dict[str, Any] = {
    "primaryColor": "blue",
    "fontFamily": FONT,
    "headings": {"fontFamily": FONT},
    "defaultRadius": "md",
    "components": {
        "Card": {"defaultProps": {"withBorder": True, "shadow": "xs", "radius": "md", "padding": "lg"}},
        "Badge": {"defaultProps": {"variant": "light"}},
    },
}

PLOTLY_TEMPLATE = "privdash"

_template = go.layout.Template(
    layout=go.Layout(
        font={"family": FONT, "size": 13, "color": COLORS["text"]},
        colorway=[COLORS["primary"], COLORS["warning"], COLORS["ok"], COLORS["danger"], "#7048e8", "#0c8599"],
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        margin={"l": 56, "r": 16, "t": 24, "b": 48},
        xaxis={"gridcolor": COLORS["grid"], "zerolinecolor": COLORS["grid"], "linecolor": COLORS["grid"]},
        yaxis={"gridcolor": COLORS["grid"], "zerolinecolor": COLORS["grid"], "linecolor": COLORS["grid"]},
        hoverlabel={"font": {"family": FONT}},
        bargap=0.15,
        showlegend=False,
    )
)
pio.templates[PLOTLY_TEMPLATE] = _template


def figure(*traces: Any, **layout: Any) -> go.Figure:
    """A figure in the dashboard's template."""
    fig = go.Figure(data=list(traces))
    fig.update_layout(template=PLOTLY_TEMPLATE, **layout)
    return fig
