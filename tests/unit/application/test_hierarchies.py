"""A dataset's hierarchies: ARX files imported and checked, the editor's rules and named groups, the stored form
beside the upload, the link that names it by id only, the exported contract, and the Fix page using them."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.application import hierarchies as hs
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data import StatisticalType
from privdash.data.contract import ColumnRole
from privdash.transform import HierarchyError

MARITAL = ["Married", "Divorced", "Never-married", "Widowed", "Separated"]


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 400
    return pd.DataFrame(
        {
            "age": rng.integers(17, 90, n),
            "marital-status": rng.choice(MARITAL, n, p=[0.4, 0.2, 0.3, 0.05, 0.05]),
            "code": rng.choice(["A011", "A012", "A021", "B101", "B102"], n),
            "income": rng.normal(40_000, 5_000, n).round(),
        }
    )


@pytest.fixture
def state(services: Services, frame: pd.DataFrame) -> ViewState:
    info = services.store.save(frame, session="s" * 32, filename="people.csv")
    loaded = services.dataset(info.id)
    base = services.initial_state(loaded)
    roles = dict.fromkeys(("age", "marital-status", "code"), ColumnRole.QUASI_IDENTIFIER)
    return base.with_columns(
        {**roles, "income": ColumnRole.SENSITIVE},
        {"age": StatisticalType.NUMERICAL, "marital-status": StatisticalType.NOMINAL, "code": StatisticalType.NOMINAL},
    )


def arx_marital() -> bytes:
    rows = [
        ("Married", "spouse present", "*"),
        ("Divorced", "spouse not present", "*"),
        ("Never-married", "spouse not present", "*"),
        ("Widowed", "spouse not present", "*"),
        ("Separated", "spouse not present", "*"),
    ]
    return "\n".join(";".join(row) for row in rows).encode()


def test_files_are_matched_to_columns_by_name_as_the_command_line_does() -> None:
    columns = ["age", "marital-status", "status", "Sex"]
    assert hs.match_column("adult_hierarchy_marital-status.csv", columns) == "marital-status"
    assert hs.match_column("age.csv", columns) == "age"
    assert hs.match_column("adult_hierarchy_sex.csv", columns) == "Sex"
    assert hs.match_column("other.csv", columns) is None


def test_an_imported_file_is_stored_beside_the_upload_and_named_by_id_in_the_link(
    services: Services, state: ViewState, frame: pd.DataFrame
) -> None:
    outcome = hs.import_files(services, state, [("adult_hierarchy_marital-status.csv", arx_marital())])
    assert outcome.errors == ()
    assert outcome.imported == (("marital-status", "adult_hierarchy_marital-status.csv"),)
    new = outcome.state
    assert new.hierarchies is not None and len(new.hierarchies) == 22
    # The stored form: a file in the dataset's folder, only the server's user can read it.
    path = Path(services.store.root) / str(state.dataset) / "hierarchies" / f"{new.hierarchies}.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    stored = json.loads(path.read_text(encoding="utf-8"))
    entry = stored["columns"]["marital-status"]
    assert entry["source"] == "file" and entry["file"] == "adult_hierarchy_marital-status.csv"
    assert ["Widowed", "spouse not present", "*"] in entry["hierarchy"]["rows"]
    assert hs.set_digest(path.read_text(encoding="utf-8")) == new.hierarchies
    # The link carries the id, never a value of the hierarchy.
    link = services.links.href(new, "/fix")
    decoded = ViewState.from_search(link.split("?", 1)[1])
    assert decoded.hierarchies == new.hierarchies
    assert "spouse" not in json.dumps(new.to_dict()) and "Widowed" not in json.dumps(new.to_dict())
    # Opened from the link (another worker: a fresh cache), the same hierarchy.
    other = Services(services.settings)
    hierarchy = hs.dataset_hierarchies(other, decoded).columns["marital-status"].hierarchy
    assert hierarchy.generalize(frame["marital-status"], 1).isin(["spouse present", "spouse not present"]).all()


def test_bad_files_get_the_core_messages_and_the_good_ones_are_kept(services: Services, state: ViewState) -> None:
    uncovered = b"Married;yes;*\nDivorced;no;*\n"
    nested = b"Married;a;*\nDivorced;a;*\nNever-married;b;*\nWidowed;b;*\nSeparated;b;*\nMarried;c;*\n"
    ragged = b"17;young\n18\n"
    outcome = hs.import_files(
        services,
        state,
        [
            ("marital-status.csv", uncovered),
            ("code.csv", nested.replace(b"Married", b"A011")),
            ("age.csv", ragged),
            ("elsewhere.csv", b"x;*\n"),
            ("adult_hierarchy_code.csv", b"\x00\x01binary"),
        ],
    )
    assert outcome.imported == () and outcome.state == state
    messages = "\n".join(outcome.errors)
    assert "3 value(s) of column 'marital-status' are not leaves of the hierarchy" in messages
    assert "Never-married" in messages and "Add them to the hierarchy file" in messages
    assert "code.csv" in messages and "more than once" in messages
    assert "age.csv" in messages and "same number of levels" in messages
    assert "elsewhere.csv matches no column" in messages
    assert "binary file" in messages
    # One good file among bad ones is stored; the bad one is reported.
    mixed = hs.import_files(services, state, [("marital-status.csv", arx_marital()), ("age.csv", ragged)])
    assert [c for c, _ in mixed.imported] == ["marital-status"] and len(mixed.errors) == 1


def test_a_file_for_a_chosen_column_and_the_limits(services: Services, state: ViewState) -> None:
    outcome = hs.import_files(services, state, [("my groups.csv", arx_marital())], column="marital-status")
    assert outcome.imported == (("marital-status", "my groups.csv"),)
    with pytest.raises(HierarchyError, match="match by file name"):
        hs.import_files(services, state, [("a.csv", b""), ("b.csv", b"")], column="age")
    with pytest.raises(HierarchyError, match="uploaded tables"):
        hs.import_files(services, ViewState(dataset="demo:people"), [("a.csv", b"x;*")])


def test_editor_rules_are_the_core_rule_settings_the_recipe_records(
    services: Services, state: ViewState, frame: pd.DataFrame
) -> None:
    new = hs.edit_column(services, state, "age", {"builder": "intervals", "widths": [5, 10], "low": 20, "high": 80})
    item = hs.dataset_hierarchies(services, new).columns["age"]
    assert item.hierarchy.rule is not None and item.hierarchy.rule["builder"] == "intervals"
    assert item.hierarchy.rule["low"] == 20 and item.hierarchy.rule["high"] == 80
    assert set(item.hierarchy.generalize(frame["age"], 1)) >= {"<20", ">=80", "20-24"}
    summary = hs.level_summary(item.hierarchy, frame["age"])
    assert [s.level for s in summary] == [0, 1, 2, 3]
    assert summary[-1].groups == 1 and summary[-1].smallest == len(frame)
    counts = frame["age"].value_counts()
    assert summary[0].groups == frame["age"].nunique() and summary[0].smallest == counts.min()
    groups = hs.groups_at(item.hierarchy, frame["age"], 1)
    assert sum(g.records for g in groups) == len(frame)
    assert groups == sorted(groups, key=lambda g: g.records)
    with pytest.raises(HierarchyError, match="multiple"):
        hs.edit_column(services, state, "age", {"builder": "intervals", "widths": [5, 7]})
    with pytest.raises(HierarchyError, match="unknown setting"):
        hs.edit_column(services, state, "age", {"builder": "intervals", "widths": [5], "labels": 1})
    with pytest.raises(HierarchyError, match="'age' holds numbers"):
        hs.edit_column(services, state, "age", {"builder": "dates", "levels": ["year"]})
    prefixes = hs.edit_column(services, state, "code", {"builder": "prefix", "lengths": [3, 1]})
    code = hs.dataset_hierarchies(services, prefixes).columns["code"].hierarchy
    assert set(code.generalize(frame["code"], 2)) == {"A*", "B*"}


def test_named_groups_in_levels_renames_and_reset(services: Services, state: ViewState, frame: pd.DataFrame) -> None:
    one = hs.group_values(services, state, "marital-status", 1, ["Divorced", "Separated"], "Apart")
    two = hs.group_values(services, one, "marital-status", 2, ["Apart", "Widowed", "Never-married"], "Alone")
    item = hs.dataset_hierarchies(services, two).columns["marital-status"]
    assert item.settings == {
        "builder": "groups",
        "levels": [
            [{"name": "Apart", "members": ["Divorced", "Separated"]}],
            [{"name": "Alone", "members": ["Apart", "Widowed", "Never-married"]}],
        ],
    }
    h = item.hierarchy
    assert h.n_levels == 4 and set(h.generalize(frame["marital-status"], 2)) == {"Married", "Alone"}
    summary = hs.level_summary(h, frame["marital-status"])
    assert [s.groups for s in summary] == [5, 4, 2, 1]
    with pytest.raises(HierarchyError, match="not values of level 0"):
        hs.group_values(services, two, "marital-status", 1, ["Apart"], "X")
    with pytest.raises(HierarchyError, match="two groups"):
        hs.group_values(services, two, "marital-status", 1, ["Divorced"], "Other")
    with pytest.raises(HierarchyError, match="left ungrouped"):
        hs.group_values(services, two, "marital-status", 1, ["Widowed"], "Married")
    renamed = hs.rename_group(services, two, "marital-status", 2, "Alone", "Single")
    h2 = hs.dataset_hierarchies(services, renamed).columns["marital-status"].hierarchy
    assert set(h2.generalize(frame["marital-status"], 2)) == {"Married", "Single"}
    back = hs.ungroup(services, renamed, "marital-status", 2, "Alone")
    assert hs.dataset_hierarchies(services, back).columns["marital-status"].hierarchy.n_levels == 3
    interval = hs.edit_column(services, state, "age", {"builder": "intervals", "widths": [10]})
    named = hs.rename_group(services, interval, "age", 1, "20-29", "twenties")
    ages = hs.dataset_hierarchies(services, named).columns["age"]
    assert "twenties" in set(ages.hierarchy.generalize(frame["age"], 1)) and ages.labels == {1: {"20-29": "twenties"}}
    assert hs.reset_column(services, hs.reset_column(services, named, "age"), "marital-status").hierarchies is None


def test_the_contract_carries_the_hierarchies_and_brings_them_back(services: Services, state: ViewState) -> None:
    new = hs.import_files(services, state, [("marital-status.csv", arx_marital())]).state
    new = hs.edit_column(services, new, "age", {"builder": "intervals", "widths": [10, 20]})
    loaded = services.dataset(str(state.dataset))
    text = hs.contract_json(services, loaded, new)
    obj = json.loads(text)
    assert {f["field_name"] for f in obj["field_metadata"]} >= {"age", "marital-status"}
    assert obj["hierarchies"]["age"]["hierarchy"] == {
        "rule": {"builder": "intervals", "widths": [10, 20], "origin": 0, "top": True}
    }
    assert obj["hierarchies"]["marital-status"]["source"] == "file"
    restored = hs.state_with_contract_hierarchies(services, state, text)
    assert restored.hierarchies == new.hierarchies
    bad = json.dumps({**obj, "hierarchies": {"nope": {"hierarchy": {"rows": [["a", "*"]]}}}})
    with pytest.raises(HierarchyError, match="'nope', which this table does not have"):
        hs.state_with_contract_hierarchies(services, state, bad)


def test_a_link_to_hierarchies_that_are_not_kept(services: Services, state: ViewState) -> None:
    ghost = state.updated(hierarchies="A" * 22)
    with pytest.raises(HierarchyError, match="not kept on the server"):
        hs.dataset_hierarchies(services, ghost)
    assert hs.reference_hierarchies(services, ghost) == {}
    with pytest.raises(Exception, match="hierarchy id is malformed"):
        state.updated(hierarchies="../../etc/passwd")


def test_the_fix_page_generalizes_and_searches_with_the_stored_hierarchies(
    services: Services, state: ViewState, frame: pd.DataFrame
) -> None:
    new = hs.import_files(services, state, [("marital-status.csv", arx_marital())]).state
    new = hs.edit_column(services, new, "age", {"builder": "intervals", "widths": [10, 20]})
    runs = FixRuns(services)
    assert runs.suggested_rule(new, "marital-status") == {"builder": "dataset"}
    assert runs.suggested_rule(state, "marital-status")["builder"] == "frequency"
    step = {"kind": "generalize", "column": "marital-status", "rule": {"builder": "dataset"}, "level": 1}
    fixed, problem = runs.append(new, step)
    assert problem is None
    run = runs.run(fixed)
    assert set(run.data["marital-status"]) == {"spouse present", "spouse not present"}
    recorded = run.recipe.steps[0].params["columns"]["marital-status"]["hierarchy"]
    assert ["Widowed", "spouse not present", "*"] in recorded["rows"]
    # Without the stored hierarchies the same step is refused with a message; the run keys differ.
    _, refused = runs.append(state, step)
    assert refused is not None and "import or edit one on the Data page" in refused
    assert runs.state_key(new) != runs.state_key(new.updated(hierarchies=None))
    # The search uses them: the age levels are the editor's intervals, marital status the imported file's.
    search = {"kind": "search", "k": 5, "max_suppression": 0.05}
    searched = runs.run(new.updated(fix=(search,)))
    assert searched.error is None
    published = set(searched.data["age"].dropna().astype(str))
    allowed = {str(v) for v in frame["age"]} | {"*"}
    allowed |= {f"{lo}-{lo + 9}" for lo in range(0, 100, 10)} | {f"{lo}-{lo + 19}" for lo in range(0, 100, 20)}
    assert published <= allowed
    status = set(searched.data["marital-status"].dropna())
    assert status <= set(MARITAL) | {"spouse present", "spouse not present", "*"}


def test_the_editor_form_reads_back_what_it_built(services: Services, state: ViewState) -> None:
    loaded = services.dataset(str(state.dataset))
    default = hs.editor_form(services, loaded, state, "age")
    assert default.builder == "intervals" and default.widths  # the default rule of a numerical column
    form = hs.EditorForm(builder="intervals", widths="10, 20", low=20, high=80)
    settings = hs.settings_from_form(form)
    assert settings == {"builder": "intervals", "widths": [10, 20], "low": 20, "high": 80}
    new = hs.edit_column(services, state, "age", settings)
    assert hs.editor_form(services, loaded, new, "age") == hs.EditorForm(
        builder="intervals", widths="10, 20", low=20, high=80
    )
    dates = hs.settings_from_form(hs.EditorForm(builder="dates", date_levels=("year", "month")))
    assert dates == {"builder": "dates", "levels": ["month", "year"]}
    with pytest.raises(HierarchyError, match="'ten' is not a number"):
        hs.settings_from_form(hs.EditorForm(builder="prefix", lengths="ten"))
    with pytest.raises(HierarchyError, match="Give the interval widths"):
        hs.settings_from_form(hs.EditorForm(builder="intervals", widths=" "))
    view = hs.editor_view(services, loaded, new, "age", 2)
    assert view.stored and view.level == 2 and view.max_level == 3
    assert view.status.startswith("Made in the editor from intervals, 3 level(s)")
    assert sum(g.records for g in view.groups) == loaded.frame["age"].notna().sum()
    default_view = hs.editor_view(services, loaded, state, "marital-status")
    assert not default_view.stored and default_view.status.startswith("The default for a nominal column")


def test_group_choices_follow_the_levels(services: Services, state: ViewState) -> None:
    values, names = hs.group_choices(services, state, "marital-status", 1)
    assert values == sorted(MARITAL) and names == []
    one = hs.group_values(services, state, "marital-status", 1, ["Divorced", "Separated"], "Apart")
    assert hs.group_choices(services, one, "marital-status", 1)[1] == ["Apart"]
    level_two, none_yet = hs.group_choices(services, one, "marital-status", 2)
    assert "Apart" in level_two and "Divorced" not in level_two and none_yet == []
