"""The targets k, l, t and the highest acceptable risk: their inputs, how their values are read, and the headline
cards that judge a table against them. Used by the Risk and Fix pages, written once here.

Input ids are ``<prefix>k``, ``<prefix>l``, ``<prefix>t`` and ``<prefix>risk`` (``target-`` on the Risk page,
``fix-target-`` on the Fix page). What passes and what fails is decided in the application layer
(:mod:`dashboard.application.riskview`); the cards only show it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dash_mantine_components as dmc

from dashboard.application.riskview import Headline
from dashboard.application.state import StateError, ViewState
from dashboard.ui.components import stat_card

__all__ = ["TARGET_KEYS", "headline_grid", "target_ids", "target_inputs", "with_targets"]

#: The targets, in the order of their inputs (and of the callback arguments that read them).
TARGET_KEYS = ("k", "l", "t", "risk")

# Labels and widths: the Risk page's full labels, and the Fix page's compact ones (a narrow column).
_LABELS = {
    False: {"k": "Target k", "l": "Target l", "t": "Target t", "risk": "Risk threshold"},
    True: {"k": "k", "l": "l", "t": "t", "risk": "risk"},
}
_WIDTHS = {False: {"k": 100, "l": 100, "t": 100, "risk": 120}, True: {"k": 80, "l": 80, "t": 90, "risk": 90}}


def target_ids(prefix: str) -> list[str]:
    """The ids of the four inputs, in :data:`TARGET_KEYS` order."""
    return [f"{prefix}{key}" for key in TARGET_KEYS]


def target_inputs(prefix: str, state: ViewState, *, compact: bool = False) -> Any:
    """The k, l, t and highest-risk inputs holding the state's targets, in one row."""
    labels, widths = _LABELS[compact], _WIDTHS[compact]
    whole = {"min": 1, "step": 1}
    share = {"min": 0, "max": 1, "step": 0.05, "decimalScale": 3}
    risk_help = {} if compact else {"description": "highest acceptable risk"}
    inputs = [
        dmc.NumberInput(id=f"{prefix}k", label=labels["k"], value=state.k, w=widths["k"], **whole),
        dmc.NumberInput(id=f"{prefix}l", label=labels["l"], value=state.l, w=widths["l"], **whole),
        dmc.NumberInput(id=f"{prefix}t", label=labels["t"], value=state.t, w=widths["t"], **share),
        dmc.NumberInput(
            id=f"{prefix}risk", label=labels["risk"], value=state.max_risk, w=widths["risk"], **share, **risk_help
        ),
    ]
    if compact:
        return dmc.Group(inputs, gap="xs")
    return dmc.Group(inputs, gap="sm", align="flex-end")


def with_targets(state: ViewState, k: Any, l: Any, t: Any, risk: Any) -> ViewState:  # noqa: E741
    """``state`` with the targets the inputs hold; an empty input keeps the state's value.

    Raises :class:`StateError` for a value that is not a number or out of range.
    """
    try:
        return state.updated(
            k=int(k) if k not in (None, "") else state.k,
            l=int(l) if l not in (None, "") else state.l,
            t=float(t) if t not in (None, "") else state.t,
            max_risk=float(risk) if risk not in (None, "") else state.max_risk,
        )
    except OverflowError:
        raise StateError("A target must be a finite number.") from None
    except (TypeError, ValueError) as exc:
        raise StateError(str(exc)) from None


def headline_grid(
    items: Sequence[Headline], *, card_prefix: str, grid_id: str, cols: dict[str, int], spacing: str = "md"
) -> Any:
    """The headline numbers as stat cards with their pass / fail badges; card ids ``<card_prefix><key>``."""
    cards = [
        stat_card(h.label, h.value, passed=h.passed, detail=h.detail, card_id=f"{card_prefix}{h.key}") for h in items
    ]
    return dmc.SimpleGrid(cards, cols=cols, spacing=spacing, id=grid_id)
