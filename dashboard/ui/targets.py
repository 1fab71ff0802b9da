"""The targets k, l, t, the highest acceptable risk and the release rules beyond them: their inputs, how their
values are read, and the headline cards that judge a table against them. Used by the Risk and Fix pages, written
once here.

Input ids are ``<prefix>k``, ``<prefix>l``, ``<prefix>t``, ``<prefix>risk`` and ``<prefix>release`` (``target-`` on
the Risk page, ``fix-target-`` on the Fix page). The release rules are one text in the command line's ``--targets``
syntax (``global_risk=0.03, household_risk=0.05``: the same names), kept in the view state's ``release`` (the
link's ``q``); a text that cannot be read is explained under the input (:func:`release_error`).

What passes and what fails is decided in the application layer
(:mod:`privdash.application.riskview`); the cards only show it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dash_mantine_components as dmc

from dashboard.ui.components import stat_card
from privdash.application.riskview import RELEASE_RULES, Headline, release_rules, release_rules_text
from privdash.application.state import StateError, ViewState

__all__ = [
    "TARGET_KEYS",
    "card_columns",
    "headline_grid",
    "release_error",
    "release_input",
    "target_ids",
    "target_inputs",
    "with_targets",
]

#: The targets, in the order of their inputs (and of the callback arguments that read them).
TARGET_KEYS = ("k", "l", "t", "risk", "release")
#: What the release-rules input explains (its description).
RELEASE_HELP = (
    "As on the command line (--targets): "
    + ", ".join(RELEASE_RULES)
    + "; e.g. global_risk=0.03, household_risk=0.05. k-map, δ-presence and population uniques take the population "
    "from the sampling weights (the column with the role 'weight'); household_risk needs a household column."
)

# Labels and widths: the Risk page's full labels, and the Fix page's compact ones (a narrow column).
_LABELS = {
    False: {"k": "Target k", "l": "Target l", "t": "Target t", "risk": "Max risk"},
    True: {"k": "k", "l": "l", "t": "t", "risk": "risk"},
}
_WIDTHS = {False: {"k": 100, "l": 100, "t": 100, "risk": 120}, True: {"k": 80, "l": 80, "t": 90, "risk": 90}}


def target_ids(prefix: str) -> list[str]:
    """The ids of the five inputs, in :data:`TARGET_KEYS` order."""
    return [f"{prefix}{key}" for key in TARGET_KEYS]


def release_input(prefix: str, state: ViewState, *, compact: bool = False) -> Any:
    """The "More release rules" text input (id ``<prefix>release``) holding the state's release rules."""
    return dmc.TextInput(
        id=f"{prefix}release",
        label="More release rules",
        description=RELEASE_HELP if not compact else "e.g. global_risk=0.03, household_risk=0.05 (as --targets)",
        placeholder="global_risk=0.03, household_risk=0.05",
        value=release_rules_text(state.release),
        debounce=True,
        size="xs" if compact else "sm",
        w="100%",
    )


def release_error(text: Any) -> str | None:
    """Why the release-rules text cannot be read (shown under its input), or None when it can."""
    try:
        release_rules(text)
    except StateError as exc:
        return str(exc)
    return None


def target_inputs(prefix: str, state: ViewState, *, compact: bool = False) -> Any:
    """The k, l, t and highest-risk inputs holding the state's targets, in one row, and the release rules under
    them."""
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
    row = dmc.Group(inputs, gap="xs") if compact else dmc.Group(inputs, gap="sm", align="flex-end")
    return dmc.Stack([row, release_input(prefix, state, compact=compact)], gap="xs")


def with_targets(state: ViewState, k: Any, l: Any, t: Any, risk: Any, release: Any = None) -> ViewState:  # noqa: E741
    """``state`` with the targets the inputs hold; an empty number input keeps the state's value, an empty
    release-rules text clears the rules (None, an input not read: keeps them).

    Raises :class:`StateError` for a value that is not a number or out of range, and for release rules that cannot
    be read.
    """
    try:
        return state.updated(
            k=int(k) if k not in (None, "") else state.k,
            l=int(l) if l not in (None, "") else state.l,
            t=float(t) if t not in (None, "") else state.t,
            max_risk=float(risk) if risk not in (None, "") else state.max_risk,
            release=release_rules(release) if release is not None else state.release,
        )
    except OverflowError:
        raise StateError("A target must be a finite number.") from None
    except (TypeError, ValueError) as exc:
        raise StateError(str(exc)) from None


def headline_grid(
    items: Sequence[Headline], *, card_prefix: str, grid_id: str, cols: dict[str, int], spacing: str = "md"
) -> Any:
    """The headline numbers as stat cards with their pass / fail badges; card ids ``<card_prefix><key>``.

    ``cols`` maps the width of the grid itself (a container query: ``{"base": 1, "350px": 2}``), not of the window,
    to a number of columns: the same grid sits in a full-width row on the Risk page and in half a column on the Fix
    page, and a card narrower than :data:`MIN_CARD_WIDTH` pixels lets its label run under its pass / fail badge.
    """
    cards = [
        stat_card(h.label, h.value, passed=h.passed, detail=h.detail, card_id=f"{card_prefix}{h.key}") for h in items
    ]
    return dmc.SimpleGrid(cards, cols=cols, spacing=spacing, id=grid_id, type="container")


#: The narrowest stat card whose one-word label ("Prosecutor", "Household", "k-anonymity") still fits beside its
#: badge, in pixels (the screenshot check measures every label at 1280, 1440 and 1920 px).
MIN_CARD_WIDTH = 180


def card_columns(counts: Sequence[int], gap: int) -> dict[str, int]:
    """The container-query columns of :func:`headline_grid` for the column counts ``counts`` (ascending): each count
    from the grid width at which its cards are :data:`MIN_CARD_WIDTH` wide with ``gap`` pixels between them; one
    column below the first."""
    cols: dict[str, int] = {"base": 1}
    for n in counts:
        if n > 1:
            cols[f"{n * MIN_CARD_WIDTH + (n - 1) * gap}px"] = n
    return cols
