"""Presenter's mode: the slides of a dataset's story carry the core's numbers (diagnosis, minimal sample uniques,
verdict, the fix's run, the measured attacks), and the slow ones are kept for the next worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from privdash.application.fixruns import FixRuns
from privdash.application.formats import fmt_count
from privdash.application.presentations import PRESENTATIONS
from privdash.application.presenter import SLIDE_KEYS, compute_slow, deck, presented_fix
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.attack import attack_release
from privdash.measure.combinations import minimal_sample_uniques
from privdash.measure.diagnose import diagnose


def make_services(tmp_path: Path, data_dir: Path | None = None) -> Services:
    folder = data_dir if data_dir is not None else tmp_path / "no-data"
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=folder))


def presentation_state(services: Services, name: str) -> ViewState:
    item = next(p for p in PRESENTATIONS if p.dataset == name)
    base = ViewState(dataset=f"demo:{name}", k=item.k, max_risk=item.max_risk, fix=item.fix)
    return services.initial_state(services.dataset(base.dataset), base)


def test_quick_slides_are_the_cores_numbers(tmp_path: Path) -> None:
    services = make_services(tmp_path)
    state = presentation_state(services, "people")
    loaded = services.dataset("demo:people")
    found = deck(services, state)
    assert [slide.key for slide in found.slides] == list(SLIDE_KEYS)
    assert found.title == loaded.title and found.story and "postcode" in found.story
    # The slow slides wait for the background job.
    assert [slide.key for slide in found.slides if slide.pending] == ["fix", "attack", "sample"]
    assert found.pending

    qis = list(state.quasi_identifiers)
    core = diagnose(loaded.frame, contract=services.contract(loaded, state), max_risk=state.max_risk)
    table = found.slide("table")
    assert table.headline == f"{fmt_count(core.n_records)} records, {len(loaded.frame.columns)} columns"
    assert table.table is not None and table.table.columns[: len(qis)] == tuple(qis)
    assert len(table.table.rows) == 5 and table.table.rows[0][0] == str(loaded.frame[qis[0]].iloc[0])

    unique = found.slide("unique")
    assert unique.headline == f"{fmt_count(core.sample_uniques)} of {fmt_count(core.n_records)} records are unique"
    msus = minimal_sample_uniques(loaded.frame, qis)
    top = msus.msus["quasi_identifiers"].value_counts()
    assert unique.table is not None
    assert unique.table.rows[0] == (" + ".join(top.index[0]), fmt_count(int(top.iloc[0])))
    assert f"{' + '.join(top.index[0])} alone singles out {fmt_count(int(top.iloc[0]))}" in unique.detail

    verdict = found.slide("verdict")
    checks = core.check(state.targets).checks
    assert verdict.passed is False and verdict.headline == "Not safe to release"
    assert verdict.table is not None and len(verdict.table.rows) == len(checks)
    assert all(row[3] == "✗ fail" for row in verdict.table.rows)


def test_slow_slides_are_the_fix_and_the_attacks_and_are_kept(tmp_path: Path) -> None:
    services = make_services(tmp_path)
    state = presentation_state(services, "mirador")
    stages: list[int] = []
    full = compute_slow(services, state, lambda percent, _text: stages.append(percent))
    assert not full.pending and stages[-1] == 100 and stages == sorted(stages)

    # The fix: the least-lossy search for the presentation's targets, its fixed table meets k = 2.
    assert full.state.fix == presented_fix(state, sensitive=False)
    runs = FixRuns(services)
    run = runs.run(full.state)
    after = diagnose(run.data, contract=run.contract, max_risk=state.max_risk)
    fix = full.slide("fix")
    assert fix.passed is True and fix.headline == "After the fix: meets every target"
    assert fix.detail.startswith("The cheapest fix found (least loss)")
    assert fix.table is not None
    numbers = {row[0]: row[1:] for row in fix.table.rows}
    assert numbers["k-anonymity"] == ("1", str(after.k))
    assert numbers["Records released"] == ("8", fmt_count(len(run.data)))

    # The attacks: linkage on the table as it is and on the release, as the core measures them.
    loaded = services.dataset("demo:mirador")
    qis = list(state.quasi_identifiers)
    before = attack_release(loaded.frame, loaded.frame, qis).linkage.targets.rate
    released = attack_release(loaded.frame, run.data, qis, recipe=run.recipe).linkage.targets.rate
    attack = full.slide("attack")
    assert attack.bars is not None and attack.bars.labels[0] == "Linkage"
    assert attack.bars.values[0][0] == pytest.approx(before) and attack.bars.values[1][0] == pytest.approx(released)
    assert attack.headline.startswith("Linkage 50% → ")

    sample = full.slide("sample")
    assert sample.headline == f"{fmt_count(len(run.data))} records released"
    assert sample.table is not None and len(sample.table.rows) == 5
    assert any("→" in cell for row in sample.table.rows for cell in row)

    # Another worker (a fresh cache in memory) reads the slow slides from disk.
    again = deck(make_services(tmp_path), state)
    assert not again.pending and again.slides == full.slides


def test_a_presentations_own_steps_are_its_fix(tmp_path: Path) -> None:
    services = make_services(tmp_path)
    state = presentation_state(services, "strm")
    assert presented_fix(state, sensitive=False) == state.fix
    fix = compute_slow(services, state).slide("fix")
    assert fix.passed is True and "Microaggregate" in fix.detail


def test_the_default_fix_searches_for_the_views_targets() -> None:
    state = ViewState(dataset="demo:people", k=3, max_risk=0.25, release={"global_risk": 0.05})
    (spec,) = presented_fix(state, sensitive=True)
    assert spec["kind"] == "search" and spec["k"] == 3 and spec["max_risk"] == 0.25
    assert spec["l"] == state.l and spec["t"] == state.t and spec["release"] == {"global_risk": 0.05}
    (plain,) = presented_fix(state.updated(max_risk=0.0, release={}), sensitive=False)
    assert "l" not in plain and "t" not in plain and "max_risk" not in plain and "release" not in plain


def test_a_story_without_quasi_identifiers_says_why(tmp_path: Path) -> None:
    services = make_services(tmp_path)
    state = presentation_state(services, "people").with_quasi_identifiers([], [])
    found = compute_slow(services, state)
    assert found.slide("table").detail == "No column is marked as a quasi-identifier."
    for key in ("unique", "verdict", "fix", "attack", "sample"):
        slide = found.slide(key)
        assert slide.error and "quasi-identifier" in slide.detail.lower(), (key, slide.detail)


def test_no_record_unique(tmp_path: Path) -> None:
    services = make_services(tmp_path)
    state = presentation_state(services, "uniform").with_quasi_identifiers(["A", "B"], [])
    unique = deck(services, state).slide("unique")
    assert unique.headline == "No record is unique" and unique.table is None
