"""Risk page builders against the core's numbers (no browser)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import plotly
import pytest

from dashboard.application.services import Services
from dashboard.application.settings import Settings
from dashboard.application.state import ViewState
from dashboard.core.data.contract import DataContract
from dashboard.core.measure.classes import equivalence_classes
from dashboard.core.measure.combinations import combination_risk, minimal_sample_uniques
from dashboard.core.measure.diagnose import diagnose
from dashboard.pages import risk as page
from dashboard.ui.components import fmt_count, fmt_number, fmt_share


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


def test_size_bins_list_small_sizes_and_group_large_ones() -> None:
    sizes = np.array([1, 1, 2, 12, 13, 20, 21, 60, 5000])
    frequencies = pd.DataFrame({"size": sizes, "classes": np.ones_like(sizes), "records": sizes})
    binned = page.size_bins(frequencies)
    assert binned["label"].tolist()[:12] == [str(s) for s in range(1, 13)]
    assert binned["label"].tolist()[12:] == ["13–20", "21–50", "51–100", "101–1,000", "1,001–10,000"]
    assert binned["classes"].sum() == len(sizes) and binned["records"].sum() == sizes.sum()
    assert binned.set_index("label").loc["13–20", "classes"] == 2
    assert binned.set_index("label").loc["1", "classes"] == 2
    huge = page.size_bins(pd.DataFrame({"size": [20_000], "classes": [1], "records": [20_000]}))
    assert huge["label"].iloc[-1] == "10,001+" and huge["classes"].iloc[-1] == 1


def test_size_bins_never_exceed_a_fixed_number_of_bars() -> None:
    sizes = np.arange(1, 100_000, 7)
    binned = page.size_bins(pd.DataFrame({"size": sizes, "classes": 1, "records": sizes}))
    assert len(binned) <= 12 + len(page.SIZE_BINS)


def test_size_table_and_histogram_mark_sizes_below_k(small: pd.DataFrame) -> None:
    classes = equivalence_classes(small, ["age", "sex"])
    binned = page.size_bins(classes.size_frequencies())
    assert binned["classes"].tolist() == [1, 1, 1, 1]
    text = as_json(page.size_table(binned, classes.n_records, 3))
    assert text.count("below-k") == 2  # sizes 1 and 2
    figure = page.size_histogram(binned, 3)
    assert list(figure.data[0].y) == [1, 1, 1, 1]
    assert figure.data[0].marker.color[:2] == ("#e03131", "#e03131")


def test_headlines_follow_the_core(small: pd.DataFrame) -> None:
    contract = DataContract.for_columns(small, quasi_identifiers=["age", "sex"], sensitive=["diag"])
    result = diagnose(small, contract=contract, threshold=0.3)
    state = ViewState(k=2, l=2, t=0.5, risk=0.3)
    by_key = {h.key: h for h in page.headlines(result, state)}
    assert by_key["k"].value == fmt_count(result.k) == "1"
    assert by_key["k"].passed is False
    models = result.sensitive_models["diag"]
    assert by_key["l"].value == fmt_number(models.l_distinct.value)
    assert by_key["l"].passed == models.l_distinct.satisfies(2)
    assert by_key["t"].value == fmt_number(models.t_closeness.value)
    assert by_key["t"].passed == models.t_closeness.satisfies(0.5)
    assert by_key["prosecutor"].value == fmt_share(result.risk.prosecutor.highest) == "100.0%"
    assert by_key["prosecutor"].passed is False
    assert by_key["marketer"].value == fmt_share(result.risk.marketer.average)
    assert by_key["marketer"].passed == (result.risk.marketer.average <= 0.3)
    lenient = diagnose(small, contract=contract, threshold=1.0)
    relaxed = {h.key: h for h in page.headlines(lenient, ViewState(k=1, l=1, t=1.0, risk=1.0))}
    assert all(h.passed for h in relaxed.values())


def test_headlines_without_sensitive_attributes(small: pd.DataFrame) -> None:
    result = diagnose(small, ["age", "sex"])
    by_key = {h.key: h for h in page.headlines(result, ViewState())}
    assert by_key["l"].passed is None and by_key["t"].passed is None


def test_class_table_matches_the_core(small: pd.DataFrame) -> None:
    result = diagnose(small, ["age", "sex"], sensitive=["diag"])
    table = page.class_table(result, ViewState(k=3, l=2, t=1.0))
    frame = table.frame
    assert frame["size"].tolist() == result.classes.sizes.tolist()
    assert frame["l0"].tolist() == result.sensitive_models["diag"].l_distinct.per_class.tolist()
    assert table.titles["l0"] == "l (diag)" and table.titles["q0"] == "age"
    fails = dict(zip(frame["q0"], frame["fails"], strict=True))
    assert fails == {"20-29": "", "30-39": "", "40-49": "k, l", "50-59": "k, l"}


def test_class_rows_sort_filter_and_page(small: pd.DataFrame) -> None:
    result = diagnose(small, ["age", "sex"], sensitive=["diag"])
    table = page.class_table(result, ViewState(k=3, l=2, t=1.0))
    rows = page.class_rows(
        table, {"startRow": 0, "endRow": 10, "sortModel": [{"colId": "size", "sort": "desc"}]}, violating_only=False
    )
    assert rows["rowCount"] == 4 and [r["size"] for r in rows["rowData"]] == [4, 3, 2, 1]
    failing = page.class_rows(table, {"startRow": 0, "endRow": 10}, violating_only=True)
    assert failing["rowCount"] == 2
    second = page.class_rows(table, {"startRow": 1, "endRow": 2}, violating_only=False)
    assert len(second["rowData"]) == 1
    json.dumps(rows)


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
    assert "No data yet" in as_json(page.layout(services))


def test_run_combinations_reports_progress(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded).with_quasi_identifiers(["sex", "hair_colour"], [])
    seen: list[int] = []
    risk, msus = page.run_combinations(services, state, lambda p: seen.append(p[0]))
    assert seen == sorted(seen) and seen[-1] == 100
    assert (
        risk.row(["sex", "hair_colour"])["classes"]
        == equivalence_classes(loaded.frame, ["sex", "hair_colour"]).n_classes
    )
    assert msus.n_unique == equivalence_classes(loaded.frame, ["sex", "hair_colour"]).sample_uniques
