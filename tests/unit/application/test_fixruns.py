"""The Fix page's runs: prefixes in the services' cache, slow runs on disk, keys that name what a run depends on."""

from __future__ import annotations

from pathlib import Path

import pytest

from privdash.application.fixes import FixError, run_fixes
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.measure.classes import MissingPolicy

AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
SUPPRESS = {"kind": "record_suppression", "k": 5, "max_suppression": 0.2}
MICRO = {"kind": "microaggregation", "k": 5, "decimals": 0}


def make_services(folder: Path) -> Services:
    return Services(Settings(store_dir=folder / "store", cache_dir=folder / "cache"))


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return make_services(tmp_path)


@pytest.fixture
def base(services: Services) -> ViewState:
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(["age", "sex", "postcode"], ["diagnosis"])


def prefix_key(runs: FixRuns, state: ViewState, n: int) -> tuple[str, str]:
    loaded = runs.services.dataset(str(state.dataset))
    contract_json = runs.services.contract(loaded, state).to_json(indent=None)
    return ("fix-run", runs.key(loaded.id, contract_json, state.missing.value, state.fix[:n]))


def test_every_prefix_is_kept_under_an_explicit_key(services: Services, base: ViewState) -> None:
    runs = FixRuns(services)
    state = base.updated(fix=(AGE, SUPPRESS))
    run = runs.run(state)
    for n in range(3):
        assert prefix_key(runs, state, n) in services.cache
    assert services.cache.get(prefix_key(runs, state, 2)) is run
    # Undo is a cached prefix: nothing is computed again.
    seen: list[int] = []
    shorter = runs.run(base.updated(fix=(AGE,)), lambda index, _text: seen.append(index))
    assert seen == [] and shorter is services.cache.get(prefix_key(runs, state, 1))
    # The run is the list applied directly.
    loaded = services.dataset("demo:people")
    direct = run_fixes(loaded.frame, services.contract(loaded, state), state.missing, [AGE, SUPPRESS])
    assert run.data.equals(direct.data) and run.recipe == direct.recipe


def test_keys_change_with_what_a_run_depends_on(services: Services, base: ViewState) -> None:
    runs = FixRuns(services)
    state = base.updated(fix=(AGE,))
    key = runs.state_key(state)
    assert len(key) == 64 and key == FixRuns(make_services(Path("/elsewhere"))).state_key(state)
    assert runs.state_key(state.updated(missing=MissingPolicy.DROP)) != key
    assert runs.state_key(state.updated(fix=(AGE, SUPPRESS))) != key
    assert runs.state_key(state.with_quasi_identifiers(["age"], [])) != key


def test_slow_runs_go_to_disk_and_are_shared(tmp_path: Path, services: Services, base: ViewState) -> None:
    runs = FixRuns(services)
    state = base.updated(fix=(AGE, MICRO))
    assert not runs.ready(state) and runs.ready(base.updated(fix=(AGE,)))
    seen: list[tuple[int, str]] = []
    run = runs.run(state, lambda index, text: seen.append((index, text)))
    assert [index for index, _ in seen] == [0, 1] and "Microaggregate" in seen[1][1]
    assert run.error is None and runs.ready(state)
    # Another worker (a fresh Services on the same folders) reads it from disk without computing.
    other = FixRuns(make_services(tmp_path))
    again: list[int] = []
    assert other.ready(state)
    assert other.run(state, lambda index, _text: again.append(index)).data.equals(run.data)
    assert again == []


def test_fixed_diagnosis_is_cached_and_falls_back_to_the_datasets(services: Services, base: ViewState) -> None:
    runs = FixRuns(services)
    assert runs.fixed_diagnosis(runs.run(base), base) is services.diagnosis(base)
    state = base.updated(fix=(AGE, SUPPRESS))
    run = runs.run(state)
    after = runs.fixed_diagnosis(run, state)
    assert after.n_records == len(run.data) and after.k == run.results[-1].summary["k_achieved"]
    key = ("fix-diagnosis", runs.state_key(state), state.missing.value, state.max_risk, state.k)
    assert services.cache.get(key) is after and runs.fixed_diagnosis(run, state) is after


def test_append_refuses_what_the_core_refuses(services: Services, base: ViewState) -> None:
    runs = FixRuns(services)
    bad = {"kind": "generalize", "column": "sex", "rule": {"builder": "intervals", "widths": [5]}, "level": 1}
    state, message = runs.append(base, bad)
    assert state == base and message is not None and "needs numbers" in message
    state, message = runs.append(base, AGE)
    assert message is None and state.fix == (AGE,)
    # A slow step is only validated: the background preview applies it.
    state, message = runs.append(base, MICRO)
    assert message is None and state.fix == (MICRO,) and not runs.ready(state)


def test_what_the_controls_need(services: Services, base: ViewState) -> None:
    runs = FixRuns(services)
    assert runs.suggested_rule(base, "age") == {"builder": "intervals", "widths": [5, 10, 20]}
    generalized = base.updated(fix=(AGE,))
    # Interval labels in the fixed table: a numerical column now gets the rule of a nominal one.
    assert runs.suggested_rule(generalized, "age")["builder"] == "frequency"
    dropped = base.updated(fix=({"kind": "drop_identifiers", "columns": ["name"]},))
    assert runs.suggested_rule(dropped, "name")["builder"] == "frequency"
    assert runs.hierarchy_hint(base, "age", "intervals", "5, 10", 1).startswith("Levels 0–3: ")
    assert "above the top level 3" in runs.hierarchy_hint(base, "age", "intervals", "5, 10", 7)
    assert "needs numbers" in runs.hierarchy_hint(base, "sex", "intervals", "5", 1)
    assert runs.hierarchy_hint(dropped, "name", "rare", "5", 1) == "'name' is not in the fixed table."
    assert runs.table(dropped).shape[1] == runs.table(base).shape[1] - 1
    with pytest.raises(FixError, match="No dataset"):
        runs.run(ViewState())
