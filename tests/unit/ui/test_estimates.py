"""The Fix page's estimates section: the text box read one estimate a line, the numbers of the previewed fix (the
core's, on the run's tables), and messages instead of numbers when they cannot be computed."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.utils
import pytest

from dashboard.ui import estimates as section
from dashboard.ui.pagestate import open_page
from privdash.application.estimates import fmt_estimate, fmt_interval, read_estimates, run_estimates
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.errors import ParameterError
from privdash.utility.estimates import ConfidenceInterval, Estimate, compare_estimates

AGE_STEP = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [10]}, "level": 1}


def as_json(component: object) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder)


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


def fixed_state(services: Services) -> ViewState:
    state, loaded, _alerts = open_page(services, {})
    assert loaded is not None
    return state.updated(fix=(AGE_STEP, {"kind": "record_suppression", "k": 3, "max_suppression": 0.05}))


def test_read_estimates_one_a_line() -> None:
    text = "mean:age by sex\n\n# a comment\n  share:sex=F  \ncoef:transaction_amount~age+sex"
    assert read_estimates(text) == (
        Estimate("mean", "age", by=("sex",)),
        Estimate("share", "sex", category="F"),
        Estimate("coef", "transaction_amount", predictors=("age", "sex")),
    )
    assert read_estimates(None) == ()
    with pytest.raises(ParameterError, match="Line 2"):
        read_estimates("mean:age\nmedian:age")
    with pytest.raises(ParameterError, match="at most"):
        read_estimates("\n".join(["mean:age"] * 21))


def test_formats() -> None:
    assert fmt_estimate(12345.678) == "12,346"
    assert fmt_estimate(0.14105) == "0.1411"
    assert fmt_estimate(2.3e13) == "23,000,000,000,000"
    assert fmt_estimate(float("nan")) == "-"
    assert fmt_interval(None) == "-"
    assert fmt_interval(ConfidenceInterval(2.0, 0.5, 1.0, 3.0, 10)) == "2 [1, 3]"


def test_section_shows_the_core_numbers_of_the_previewed_fix(services: Services) -> None:
    state = fixed_state(services)
    runs = FixRuns(services)
    shown = as_json(section.compute(runs, state, "mean:age by sex\nshare:sex"))
    run = runs.run(state)
    expected = compare_estimates(run.original, run.data, ["mean:age by sex", "share:sex"])
    assert run_estimates(run, ["mean:age by sex", "share:sex"])[0].rows == expected[0].rows
    for comparison in expected:
        for row in comparison.rows:
            assert row.term in shown and fmt_interval(row.before) in shown and fmt_interval(row.after) in shown
    assert "estimates-table" in shown and "midpoint" in shown  # age is published as intervals
    assert "not published" in shown  # the suppressed records are said


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Name an estimate first"),
        ("median:age", "Unknown estimate"),
        ("mean:nothing", "nothing"),
        ("mean:sex", "not numeric"),
    ],
)
def test_section_messages(services: Services, text: str, message: str) -> None:
    shown = as_json(section.compute(FixRuns(services), fixed_state(services), text))
    assert message in shown


def test_card_is_labelled(services: Services) -> None:
    state, loaded, _alerts = open_page(services, {})
    assert loaded is not None
    shown = as_json(section.card(loaded, state, services))
    assert "Estimates the data are published for, one a line" in shown
    assert "every record weighs 1" in shown  # the demo has no weight column
    assert "estimates-input" in shown and "Compare before and after" in shown
