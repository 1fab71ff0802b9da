"""The target inputs, their parser and the headline cards, written once for the Risk and Fix pages."""

from __future__ import annotations

import json

import plotly
import pytest

from dashboard.ui.targets import (
    MIN_CARD_WIDTH,
    TARGET_KEYS,
    card_columns,
    headline_grid,
    release_error,
    target_ids,
    target_inputs,
    with_targets,
)
from privdash.application.riskview import Headline
from privdash.application.state import StateError, ViewState


def as_json(component: object) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder)


@pytest.mark.parametrize(("prefix", "compact"), [("target-", False), ("fix-target-", True)])
def test_inputs_hold_the_states_targets(prefix: str, compact: bool) -> None:
    state = ViewState(k=7, l=3, t=0.35, max_risk=0.1, release={"global_risk": 0.03, "k_map": 3})
    row, rules = target_inputs(prefix, state, compact=compact).children
    inputs = {item.id: item for item in [*row.children, rules]}
    assert list(inputs) == target_ids(prefix) == [f"{prefix}{key}" for key in TARGET_KEYS]
    values = [inputs[f"{prefix}{key}"].value for key in TARGET_KEYS]
    assert values == [7, 3, 0.35, 0.1, "global_risk=0.03, k_map=3"]
    assert rules.label == "More release rules"
    assert inputs[f"{prefix}t"].max == inputs[f"{prefix}risk"].max == 1
    label = inputs[f"{prefix}k"].label
    assert label == ("k" if compact else "Target k")


def test_the_parser_keeps_empty_inputs_and_refuses_bad_ones() -> None:
    state = ViewState(k=5, l=2, t=0.2, max_risk=0.2)
    assert with_targets(state, 3, "", None, 0.5) == state.updated(k=3, max_risk=0.5)
    assert with_targets(state, None, None, None, None) == state
    assert with_targets(state, "4", "3", "0.1", "0.05") == state.updated(k=4, l=3, t=0.1, max_risk=0.05)
    with pytest.raises(StateError):
        with_targets(state, "many", None, None, None)
    with pytest.raises(StateError, match=r"t is a distance between 0 and 1"):
        with_targets(state, None, None, 1.5, None)


def test_the_release_rules_text_sets_clears_or_keeps_the_rules() -> None:
    state = ViewState(k=5, release={"average_risk": 0.1})
    assert with_targets(state, None, None, None, None, "global_risk=0.03, household_risk=0.05").release == {
        "global_risk": 0.03,
        "household_risk": 0.05,
    }
    assert with_targets(state, None, None, None, None, None).release == {"average_risk": 0.1}
    assert with_targets(state, None, None, None, None, " ").release == {}
    with pytest.raises(StateError, match="delta_presence must lie in"):
        with_targets(state, None, None, None, None, "delta_presence=0")
    assert release_error("k_map=2.5") == "The target k_map must be a whole number, got 2.5."
    assert release_error("population_uniques=0.01, population_uniques_estimator=snb") is None


def test_headline_cards_show_the_verdicts() -> None:
    items = [Headline("k-anonymity", "3", False, "target k ≥ 5", "k"), Headline("l-diversity", "-", None, "", "l")]
    grid = headline_grid(items, card_prefix="fix-after-", grid_id="fix-after-cards", cols={"base": 2})
    assert grid.id == "fix-after-cards"
    assert [card.id for card in grid.children] == ["fix-after-k", "fix-after-l"]
    text = as_json(grid)
    assert text.count('"stat-status"') == 1 and '"fail"' in text


def test_card_columns_keep_every_card_wide_enough_for_its_label_and_badge() -> None:
    # the grid's own width decides: half a Fix page column at 1280 px (323 px) holds one card, at 1440 px (383 px)
    # two, a full Risk page row at 1280 px (1000 px) three, at 1440 px (1160 px) six
    cols = card_columns((2, 3, 6), gap=16)
    assert cols == {"base": 1, "376px": 2, "572px": 3, "1160px": 6}
    for width, n in cols.items():
        if width != "base":
            assert (int(width.removesuffix("px")) - (n - 1) * 16) / n >= MIN_CARD_WIDTH

    def columns(grid_width: int) -> int:
        return max(n for width, n in cols.items() if width == "base" or int(width[:-2]) <= grid_width)

    assert [columns(w) for w in (323, 383, 1000, 1160)] == [1, 2, 3, 6]
    grid = headline_grid([], card_prefix="card-", grid_id="headline-cards", cols=cols)
    assert grid.type == "container"  # container queries: the breakpoints are the grid's width, not the window's
