"""What the Risk and Fix pages show of a diagnosis, as plain data, against the core's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.application import riskview
from privdash.application.formats import fmt_count, fmt_number, fmt_share
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.contract import DataContract
from privdash.measure.classes import equivalence_classes
from privdash.measure.diagnose import diagnose
from privdash.targets import PrivacyTargets


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
    binned = riskview.size_bins(frequencies)
    assert binned["label"].tolist()[:12] == [str(s) for s in range(1, 13)]
    assert binned["label"].tolist()[12:] == ["13–20", "21–50", "51–100", "101–1,000", "1,001–10,000"]
    assert binned["classes"].sum() == len(sizes) and binned["records"].sum() == sizes.sum()
    assert binned.set_index("label").loc["13–20", "classes"] == 2
    assert binned.set_index("label").loc["1", "classes"] == 2
    huge = riskview.size_bins(pd.DataFrame({"size": [20_000], "classes": [1], "records": [20_000]}))
    assert huge["label"].iloc[-1] == "10,001+" and huge["classes"].iloc[-1] == 1


def test_size_bins_never_exceed_a_fixed_number_of_bars() -> None:
    sizes = np.arange(1, 100_000, 7)
    binned = riskview.size_bins(pd.DataFrame({"size": sizes, "classes": 1, "records": sizes}))
    assert len(binned) <= 12 + len(riskview.SIZE_BINS)


def test_headlines_follow_the_core(small: pd.DataFrame) -> None:
    contract = DataContract.for_columns(small, quasi_identifiers=["age", "sex"], sensitive=["diag"])
    result = diagnose(small, contract=contract, max_risk=0.3)
    state = ViewState(k=2, l=2, t=0.5, max_risk=0.3)
    by_key = {h.key: h for h in riskview.risk_headlines(result, state)}
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
    lenient = diagnose(small, contract=contract, max_risk=1.0)
    relaxed = {h.key: h for h in riskview.risk_headlines(lenient, ViewState(k=1, l=1, t=1.0, max_risk=1.0))}
    assert all(h.passed for h in relaxed.values())


def test_headlines_without_sensitive_attributes(small: pd.DataFrame) -> None:
    result = diagnose(small, ["age", "sex"])
    by_key = {h.key: h for h in riskview.risk_headlines(result, ViewState())}
    assert by_key["l"].passed is None and by_key["t"].passed is None


def test_class_table_matches_the_core(small: pd.DataFrame) -> None:
    result = diagnose(small, ["age", "sex"], sensitive=["diag"])
    table = riskview.class_table(result, ViewState(k=3, l=2, t=1.0))
    frame = table.frame
    assert frame["size"].tolist() == result.classes.sizes.tolist()
    assert frame["l0"].tolist() == result.sensitive_models["diag"].l_distinct.per_class.tolist()
    assert table.titles["l0"] == "l (diag)" and table.titles["q0"] == "age"
    fails = dict(zip(frame["q0"], frame["fails"], strict=True))
    assert fails == {"20-29": "", "30-39": "", "40-49": "k, l", "50-59": "k, l"}


def test_class_table_of_people_shows_each_persons_key() -> None:
    from tests.unit.core.measure.test_entities import VISITS

    result = diagnose(VISITS, ["age", "sex"], sensitive=["dx"], entity="pid")
    table = riskview.class_table(result, ViewState(k=2, l=1, t=1.0))
    assert table.titles["q0"] == "person_key" and "q1" not in table.titles
    assert table.frame["q0"].astype(str).tolist() == ["(age=40, sex=M)", "(age=30, sex=F); (age=31, sex=F)"]
    assert table.frame["size"].tolist() == [1, 3] and table.frame["fails"].tolist() == ["k", ""]


def test_class_rows_sort_filter_and_page(small: pd.DataFrame) -> None:
    result = diagnose(small, ["age", "sex"], sensitive=["diag"])
    table = riskview.class_table(result, ViewState(k=3, l=2, t=1.0))
    rows = riskview.class_rows(
        table, {"startRow": 0, "endRow": 10, "sortModel": [{"colId": "size", "sort": "desc"}]}, violating_only=False
    )
    assert rows["rowCount"] == 4 and [r["size"] for r in rows["rowData"]] == [4, 3, 2, 1]
    failing = riskview.class_rows(table, {"startRow": 0, "endRow": 10}, violating_only=True)
    assert failing["rowCount"] == 2
    second = riskview.class_rows(table, {"startRow": 1, "endRow": 2}, violating_only=False)
    assert len(second["rowData"]) == 1
    json.dumps(rows)


def test_run_combinations_reports_progress(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded).with_quasi_identifiers(["sex", "hair_colour"], [])
    seen: list[int] = []
    risk, msus = riskview.run_combinations(services, state, lambda p: seen.append(p[0]))
    assert seen == sorted(seen) and seen[-1] == 100
    assert (
        risk.row(["sex", "hair_colour"])["classes"]
        == equivalence_classes(loaded.frame, ["sex", "hair_colour"]).n_classes
    )
    assert msus.n_unique == equivalence_classes(loaded.frame, ["sex", "hair_colour"]).sample_uniques


def test_size_bins_of_an_empty_table() -> None:
    binned = riskview.size_bins(pd.DataFrame({"size": [], "classes": [], "records": []}, dtype=np.int64))
    assert binned["label"].tolist() == ["1"] and binned["classes"].tolist() == [0]


def test_verdicts_are_the_cores(small: pd.DataFrame) -> None:
    contract = DataContract.for_columns(small, quasi_identifiers=["age", "sex"], sensitive=["diag"])
    result = diagnose(small, contract=contract, max_risk=0.3)
    state = ViewState(k=2, l=2, t=0.5, max_risk=0.3)
    targets = riskview.view_targets(state, result)
    assert targets == PrivacyTargets(k=2, l=2, t=0.5, max_risk=0.3)
    found = riskview.verdicts(result, state)
    core = {check.target: check.passed for check in result.check(targets).checks}
    assert (found.k, found.l, found.t, found.max_risk) == (core["k"], core["l"], core["t"], core["max_risk"])
    assert found.max_risk is False and found.max_risk == (result.risk.prosecutor.n_records_at_risk == 0)
    # Without a sensitive attribute l and t are not judged; a cap of 0 leaves every record at risk.
    plain = diagnose(small, ["age", "sex"], max_risk=0.0)
    bare = riskview.verdicts(plain, ViewState(k=1, max_risk=0.0))
    assert riskview.view_targets(ViewState(max_risk=0.0), plain).max_risk is None
    assert (bare.k, bare.l, bare.t, bare.max_risk) == (True, None, None, False)


def test_fix_headlines_judge_one_side(small: pd.DataFrame) -> None:
    contract = DataContract.for_columns(small, quasi_identifiers=["age", "sex"], sensitive=["diag"])
    result = diagnose(small, contract=contract, max_risk=0.3)
    state = ViewState(k=2, l=2, t=0.5, max_risk=0.3)
    by_key = {h.key: h for h in riskview.fix_headlines(result, state)}
    assert list(by_key) == ["k", "risk", "at-risk", "l", "t"]
    prosecutor = result.risk.prosecutor
    assert by_key["risk"].value == fmt_share(prosecutor.highest)
    assert by_key["at-risk"].value == fmt_count(prosecutor.n_records_at_risk)
    assert by_key["risk"].passed is by_key["at-risk"].passed is (prosecutor.highest <= 0.3)
    assert by_key["k"].passed is False and "1 records in smaller classes" in by_key["k"].detail
    assert "distance" not in by_key["t"].detail
    # No sensitive attribute: no l and t cards on the Fix page.
    plain = diagnose(small, ["age", "sex"])
    assert [h.key for h in riskview.fix_headlines(plain, state)] == ["k", "risk", "at-risk"]


def test_missing_effect_follows_the_policy() -> None:
    frame = pd.DataFrame({"a": ["x", None, "x", "y"], "b": [1, 1, 1, 2]})
    value = diagnose(frame, ["a", "b"], missing="value")
    assert riskview.missing_effect(value) == "1 records with a missing QI value form their own classes"
    dropped = diagnose(frame, ["a", "b"], missing="drop")
    assert riskview.missing_effect(dropped) == "1 records with a missing QI value left out"
    wildcard = diagnose(frame, ["a", "b"], missing="wildcard")
    assert "match every compatible class" in riskview.missing_effect(wildcard)


def test_the_class_table_is_cached_under_an_explicit_key(services: Services) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded).with_quasi_identifiers(["sex", "hair_colour"], [])
    table = riskview.cached_class_table(services, state)
    assert riskview.cached_class_table(services, state) is table
    contract_json = services.contract(loaded, state).to_json(indent=None)
    key = ("class-table", "demo:people", contract_json, state.missing.value, state.max_risk, state.k, state.l, state.t)
    assert key in services.cache
    other = riskview.cached_class_table(services, state.updated(k=3))
    assert other is not table and other.frame["size"].tolist() == table.frame["size"].tolist()


def test_survey_risk_rows_show_sdcmicro_global_risk_only_with_weights(data_dir) -> None:
    from privdash.application.riskview import survey_risk_rows
    from privdash.data.tables import read_table

    data = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    assert survey_risk_rows(diagnose(data, keys)) == []
    weighted = diagnose(data, keys, weights="sampling_weight")
    rows = {row.key: row for row in survey_risk_rows(weighted)}
    assert list(rows) == ["global-risk"]
    # 10.778 expected re-identifications of 4,580 records (sdcMicro 5.8: 0.24 %)
    assert rows["global-risk"].value == "0.24%"
    assert "10.778" in rows["global-risk"].detail and "4,580" in rows["global-risk"].detail
