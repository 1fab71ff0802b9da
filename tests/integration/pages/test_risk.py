"""Risk page builders against the core's numbers (no browser)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly
import pytest

from dashboard.pages import risk as page
from dashboard.ui.charts import size_histogram
from dashboard.ui.theme import COLORS
from privdash.application.riskview import size_bins
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.measure.classes import equivalence_classes
from privdash.measure.combinations import combination_risk, minimal_sample_uniques
from privdash.measure.diagnose import diagnose


def as_json(component: object) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder)


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


@pytest.fixture
def small() -> pd.DataFrame:
    """The peers.md worked-example shape: 10 records, QIs age band and sex, SA diagnosis."""
    return pd.DataFrame(
        {
            "age": ["20-29"] * 3 + ["30-39"] * 4 + ["40-49"] * 2 + ["50-59"],
            "sex": ["F"] * 3 + ["M"] * 4 + ["F"] * 2 + ["M"],
            "diag": ["flu", "flu", "cold", "flu", "hiv", "cold", "cold", "flu", "flu", "cancer"],
        }
    )


def test_size_table_and_histogram_mark_sizes_below_k(small: pd.DataFrame) -> None:
    classes = equivalence_classes(small, ["age", "sex"])
    binned = size_bins(classes.size_frequencies())
    assert binned["classes"].tolist() == [1, 1, 1, 1]
    text = as_json(page.size_table(binned, classes.n_records, 3))
    assert text.count("below-k") == 2  # sizes 1 and 2
    figure = size_histogram(binned, 3)
    assert list(figure.data[0].y) == [1, 1, 1, 1]
    assert figure.data[0].marker.color[:2] == (COLORS["danger"], COLORS["danger"])
    assert figure.data[0].marker.color[2] != COLORS["danger"]


def test_records_at_risk_curve_is_the_cores(small: pd.DataFrame) -> None:
    result = diagnose(small, ["age", "sex"], k_values=range(1, 6))
    figure = page.records_at_risk_figure(result, 3)
    assert list(figure.data[0].x) == [1, 2, 3, 4, 5]
    assert list(figure.data[0].customdata) == [result.classes.records_below(k) for k in range(1, 6)]


def test_combinations_view_shows_every_subset(small: pd.DataFrame) -> None:
    risk = combination_risk(small, ["age", "sex"])
    msus = minimal_sample_uniques(small, ["age", "sex"])
    text = as_json(page.combinations_view(risk, msus))
    assert '"age + sex"' in text and "contribution-chart" in text
    assert f"{msus.n_unique} records are unique" in text


def test_results_explain_missing_quasi_identifiers(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded).with_quasi_identifiers([], ["diagnosis"])
    assert "No quasi-identifier" in as_json(page.results(services, state))


def test_layout_of_the_demo(services: Services) -> None:
    text = as_json(page.layout(services, s=ViewState(dataset="demo:people").encode()))
    for component_id in (
        "risk-qis",
        "risk-missing",
        "card-k",
        "size-table",
        "size-chart",
        "risk-curve",
        "class-grid",
        "combo-progress",
        "combo-cancel",
    ):
        assert f'"{component_id}"' in text
    assert "No data yet" in as_json(page.layout(services, s=ViewState(dataset="demo:nothing").encode()))


def test_the_page_opens_with_the_core_verdict(services: Services) -> None:
    from dashboard.pages import risk as page
    from privdash.application.riskview import release_verdict

    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded)
    diagnosis = services.diagnosis(state)
    verdict = release_verdict(diagnosis, state)
    from privdash.targets import PrivacyTargets

    assert verdict == diagnosis.check(PrivacyTargets(k=state.k, l=state.l, t=state.t, max_risk=state.max_risk))
    text = json.dumps(page.results(services, state).to_plotly_json(), default=str)
    assert verdict.sentence() in text.replace("\\u2265", "≥").replace("\\u2264", "≤")
    assert ("FAIL: Not safe to release" in text) is (not verdict.passed)
    assert f"counted by {diagnosis.engine}" in text


def test_results_show_survey_and_household_risk_of_an_uploaded_survey(services: Services, data_dir: Path) -> None:
    from privdash.data.contract import ColumnRole

    raw = (data_dir / "sdcmicro_testdata" / "testdata.csv").read_bytes()
    info = services.ingest(raw, filename="testdata.csv", session="s" * 40)
    loaded = services.dataset(info.id)
    state = services.initial_state(loaded)
    # the household id and the sampling weight are suggested by their names
    assert state.roles["ori_hid"] == ColumnRole.HOUSEHOLD and state.roles["sampling_weight"] == ColumnRole.WEIGHT
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    state = state.with_quasi_identifiers(keys, [])
    text = as_json(page.results(services, state))
    assert "survey-risk-card" in text and "survey-global-risk" in text and "survey-household-risk" in text
    result = diagnose(read_csv_like(data_dir), keys, weights="sampling_weight", household="ori_hid")
    assert f"{100 * result.individual_risk.global_risk:.2f}%" in text
    assert f"{100 * result.household_risk.global_risk:.2f}%" in text
    # without the household role, the row goes; without the weight, sdcMicro's global risk goes too
    plain = state.with_columns(roles={"ori_hid": ColumnRole.INSENSITIVE, "sampling_weight": ColumnRole.INSENSITIVE})
    assert "survey-risk-card" not in as_json(page.results(services, plain))


def read_csv_like(data_dir: Path) -> pd.DataFrame:
    from privdash.data.tables import read_table

    return read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")


def test_model_based_risk_is_fitted_on_request_and_shown(services: Services, data_dir: Path) -> None:
    raw = (data_dir / "sdcmicro_testdata" / "testdata.csv").read_bytes()
    loaded = services.dataset(services.ingest(raw, filename="testdata.csv", session="s" * 40).id)
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    state = services.initial_state(loaded).with_quasi_identifiers(keys, [])
    assert "survey-model-" not in as_json(page.results(services, state))
    chosen = page.controls_state(state, keys, [], "value", ["IPF", "default"], *([None] * 4))
    assert chosen.model_risk == ("IPF", "default")
    text = as_json(page.results(services, chosen))
    expected = diagnose(
        read_csv_like(data_dir), keys, weights="sampling_weight", household="ori_hid", model_risk=["IPF", "default"]
    )
    for method in ("IPF", "default"):
        assert f"survey-model-{method}" in text
        assert f"{100 * expected.model_risk[method].risk1:.2f}%" in text
    assert '"risk-model"' in as_json(page.controls(list(loaded.frame.columns), chosen))
    with pytest.raises(Exception, match="CE, PML"):
        page.controls_state(state, keys, [], "value", ["poisson"], *([None] * 4))
