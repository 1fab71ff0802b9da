"""One look for the whole dashboard: the Mantine theme and the matching plotly template.

Everything is served by the app itself (Mantine's CSS is bundled with dash-mantine-components, plotly.js with
Dash); the font stack is the system's, so no font, stylesheet or script comes from the internet.

Contrast (WCAG 2.1 AA, contrast ratio = (L1 + 0.05) / (L2 + 0.05) of the relative luminances)
    Text needs 4.5:1 against its background, large text and the parts of controls and graphics 3:1 (success
    criteria 1.4.3 and 1.4.11). Mantine draws a filled component (button, badge) in shade ``primaryShade`` of its
    colour with white text, and a light one (alert, active navigation entry) with that shade as text on a 10 % tint
    of it. Mantine's default shades 6 are 2.4-3.6:1 against white, so the theme uses shade 8 and darkens shades 8
    and 9 of the colours the pages use (:data:`PALETTES`): every shade 8 is at least 5.3:1 against white and 4.6:1
    against its own tint. Hint text (``c="dimmed"``) is re-coloured in ``assets/privdash.css``.
Status colours
    :data:`COLORS` ``danger``, ``warning`` and ``ok`` are the traffic lights (the postcode map, class-size bars below
    k): dark crimson, dark orange and blue rather than red, yellow and green, so that they stay apart for the
    common colour-vision deficiencies (red-green confusion) and in grey scale, each at least 4:1 against white.
    Colour never carries a status alone: badges say "pass" or "fail", bars below k are hatched, every chart has a
    table of its numbers.
"""

from __future__ import annotations

from typing import Any

import dash_mantine_components as dmc
import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["COLORS", "FOCUS_COLOR", "PALETTES", "PLOTLY_TEMPLATE", "THEME", "figure"]

FONT = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

#: Shade 8 and 9 of the Mantine colours the pages use, darker than Mantine's defaults (see the module docstring).
_DARK_SHADES: dict[str, tuple[str, str]] = {
    "blue": ("#1864ab", "#124f87"),
    "red": ("#c92a2a", "#a61e1e"),
    "green": ("#23782f", "#1b6427"),
    "teal": ("#08795a", "#066649"),
    "orange": ("#ad3a0a", "#8f3008"),
    "yellow": ("#9c5b00", "#804a00"),
    "cyan": ("#0b7285", "#095c6b"),
}
_DEFAULT_COLORS: dict[str, list[str]] = dmc.DEFAULT_THEME["colors"]
#: The ten shades of each re-coloured Mantine colour: Mantine's shades 0-7, then the darker 8 and 9.
PALETTES: dict[str, list[str]] = {name: [*_DEFAULT_COLORS[name][:8], *dark] for name, dark in _DARK_SHADES.items()}

COLORS = {
    "primary": PALETTES["blue"][8],
    "danger": "#70002a",  # fail: dark crimson, 12.2:1 against white
    "warning": "#c95d00",  # amber: dark orange, 4.2:1
    "ok": "#0f6cbd",  # pass: blue, 5.4:1
    "muted": "#5c636a",  # grey, 6.1:1 (also the hint text, see privdash.css)
    "grid": "#e9ecef",  # gray 2: grid lines only, never text
    "text": "#212529",  # dark 8
}
#: The keyboard focus ring: 8.4:1 against white, drawn with a gap, so also 3:1 next to filled buttons.
FOCUS_COLOR = PALETTES["blue"][9]

THEME: dict[str, Any] = {
    "primaryColor": "blue",
    "primaryShade": {"light": 8, "dark": 8},
    "colors": PALETTES,
    "focusRing": "auto",
    "fontFamily": FONT,
    "headings": {"fontFamily": FONT},
    "defaultRadius": "md",
    "components": {
        "Card": {"defaultProps": {"withBorder": True, "shadow": "xs", "radius": "md", "padding": "lg"}},
        "Badge": {"defaultProps": {"variant": "light"}},
        # The chosen segment is a filled block with white text (not white on light grey), so the state is visible.
        "SegmentedControl": {"defaultProps": {"color": "blue"}},
    },
}

PLOTLY_TEMPLATE = "privdash"

_template = go.layout.Template(
    layout=go.Layout(
        font={"family": FONT, "size": 13, "color": COLORS["text"]},
        colorway=[COLORS["primary"], COLORS["warning"], COLORS["ok"], COLORS["danger"], "#5f3dc4", "#095c6b"],
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        margin={"l": 56, "r": 16, "t": 24, "b": 48},
        xaxis={"gridcolor": COLORS["grid"], "zerolinecolor": COLORS["grid"], "linecolor": COLORS["muted"]},
        yaxis={"gridcolor": COLORS["grid"], "zerolinecolor": COLORS["grid"], "linecolor": COLORS["muted"]},
        hoverlabel={"font": {"family": FONT}},
        # The mode bar's icons are controls: 3:1 at least (plotly's default grey is 1.7:1).
        modebar={"color": COLORS["muted"], "activecolor": COLORS["primary"], "bgcolor": "rgba(255,255,255,0.9)"},
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
