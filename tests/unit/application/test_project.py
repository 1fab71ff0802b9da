"""Project files: a round trip keeps every part, damaged, foreign and newer files are refused with a message, the
fingerprint says what differs, and no data value is written unless the table is asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.application import hierarchies as hs
from privdash.application.columns import current_order, state_with_order
from privdash.application.fixruns import FixRuns
from privdash.application.project import (
    FORMAT,
    MAX_SETTINGS_BYTES,
    LedgerReference,
    Project,
    TableSummary,
    open_project,
    project_from_state,
    table_bytes,
)
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType
from privdash.errors import ColumnError, DataReadError, ParameterError
from privdash.targets import PrivacyTargets
from privdash.transform.steps import Recipe

SECRET = "zz-rare-diagnosis-417"


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [30, 40, 30, 50, 40],
            "size": ["S", "M", "S", "L", "M"],
            "disease": ["flu", "cold", "flu", SECRET, "cold"],
        }
    )


@pytest.fixture
def project(frame: pd.DataFrame) -> Project:
    contract = DataContract(
        (
            FieldMetadata("age", ColumnRole.QUASI_IDENTIFIER, StatisticalType.NUMERICAL),
            FieldMetadata("size", ColumnRole.QUASI_IDENTIFIER, StatisticalType.ORDINAL, ("S", "M", "L")),
            FieldMetadata("disease", ColumnRole.SENSITIVE, StatisticalType.NOMINAL),
        )
    )
    recipe = Recipe.from_dict({"steps": [{"kind": "top_bottom_coding", "params": {"column": "age", "top": 45}}]})
    return Project(
        dataset=TableSummary.of(frame),
        contract=contract,
        title="clinic.csv",
        origin="upload",
        missing="wildcard",
        targets=PrivacyTargets(k=3, l=2, max_risk=0.3, global_risk=0.05),
        steps=({"kind": "search", "k": 3, "max_suppression": 0.05, "pick": 2},),
        recipe=recipe,
        view={"violating": True, "model_risk": ["IPF"]},
        signoff={"name": "Ann Steward", "role": "DPO", "decision": "conditions", "conditions": "no postcodes"},
        ledger=LedgerReference("Clinic 2024", "ledger.json"),
    )


def test_a_saved_project_reads_back_with_every_part(project: Project, tmp_path: Path) -> None:
    path = project.save(tmp_path / "clinic.privdash")
    loaded = Project.load(path)
    assert loaded.to_dict() == {**project.to_dict(), "saved": loaded.saved, "made_by": loaded.made_by}
    assert loaded.contract.ordinal_orders() == {"size": ("S", "M", "L")}
    assert loaded.targets.global_risk == 0.05 and loaded.missing.value == "wildcard"
    assert loaded.solution == {"step": 1, "pick": 2}
    assert loaded.signoff["decision"] == "conditions" and loaded.ledger == LedgerReference("Clinic 2024", "ledger.json")
    assert loaded.recipe is not None and loaded.recipe.steps[0].kind == "top_bottom_coding"
    obj = json.loads(path.read_text(encoding="utf-8"))
    assert obj["format"] == FORMAT and obj["version"] == 1 and "table" not in obj


def test_no_data_value_is_written_unless_the_table_is_asked_for(project: Project, frame: pd.DataFrame) -> None:
    assert SECRET.encode() not in project.to_bytes()
    assert b"flu" not in project.to_bytes()
    with_table = Project.from_bytes(Project(project.dataset, project.contract, table=table_bytes(frame)).to_bytes())
    kept = with_table.table_frame()
    assert kept is not None and kept["disease"].tolist() == frame["disease"].tolist()
    assert with_table.check_table(kept).same


def test_the_fingerprint_says_what_differs(project: Project, frame: pd.DataFrame) -> None:
    assert project.check_table(frame.iloc[::-1]).same  # the same rows in another order
    assert project.check_table(frame.astype({"age": float})).same  # 30 and 30.0 are one value
    changed = frame.assign(disease=frame["disease"].replace("flu", "angina"), extra=1).drop(columns="size")
    differences = project.check_table(changed.iloc[:4])
    assert not differences.same
    assert differences.rows == (5, 4) and differences.missing == ("size",) and differences.added == ("extra",)
    assert differences.changed == ("age", "disease")
    text = differences.describe()
    assert "5 rows; this table has 4" in text and "'size'" in text and "'extra'" in text and "'disease'" in text
    same_shape = project.check_table(frame.assign(disease=list(reversed(frame["disease"]))))
    assert not same_shape.same and same_shape.changed == () and "rows differ" in same_shape.describe()


def test_a_table_without_a_column_the_project_uses_is_refused(project: Project, frame: pd.DataFrame) -> None:
    with pytest.raises(ColumnError, match="'size'"):
        project.require_columns(frame.drop(columns="size").columns, "clinic.csv")
    project.require_columns(frame.columns)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"", "empty"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"{not json", "not valid JSON"),
        (b'{"privdash_recipe": 1, "steps": []}', "not a privdash project"),
        (b"[1, 2]", "not a privdash project"),
        (b'{"format": "privdash-project", "version": "one"}', "version 'one'"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON|not a privdash project"),
    ],
)
def test_damaged_and_foreign_files_are_refused(raw: bytes, words: str) -> None:
    with pytest.raises(DataReadError, match=words):
        Project.from_bytes(raw)


def test_a_newer_version_asks_for_an_update(project: Project) -> None:
    obj = json.loads(project.to_bytes())
    obj["version"] = 2
    with pytest.raises(DataReadError, match=r"newer privdash \(project version 2"):
        Project.from_bytes(json.dumps(obj).encode())


@pytest.mark.parametrize(
    ("part", "value", "words"),
    [
        ("surprise", 1, "unknown part"),
        ("contract", {"fields": []}, "its contract"),
        ("targets", {"k": 0}, "its targets"),
        ("recipe", {"steps": [{"kind": "run_shell", "params": {}}]}, "its recipe"),
        ("steps", [{"kind": "format_disk"}], "a step"),
        ("steps", "search", "not a list"),
        ("signoff", {"decision": "maybe"}, "decision must be one of"),
        ("signoff", {"mood": "happy"}, "Unknown sign-off"),
        ("ledger", {"identity": "x\x00y"}, "control character"),
        ("table", {"format": "pickle", "base64": "AA=="}, "parquet"),
        ("table", {"format": "parquet", "base64": "@@@"}, "base64"),
        ("dataset", {"rows": 3, "columns": ["a"], "digest": "nope"}, "SHA-256"),
        ("view", {"theme": "dark"}, "page settings"),
        ("missing", "sometimes", "damaged"),
    ],
)
def test_a_damaged_part_is_named(project: Project, part: str, value: object, words: str) -> None:
    obj = json.loads(project.to_bytes())
    obj[part] = value
    with pytest.raises(DataReadError, match=words):
        Project.from_bytes(json.dumps(obj).encode())


def test_sizes_are_bounded(project: Project, tmp_path: Path) -> None:
    with pytest.raises(DataReadError, match="larger than"):
        Project.from_bytes(project.to_bytes(), max_bytes=100)
    obj = json.loads(project.to_bytes())
    obj["dataset"]["title"] = "x" * (MAX_SETTINGS_BYTES + 1)
    with pytest.raises(DataReadError, match="settings"):
        Project.from_bytes(json.dumps(obj).encode())
    path = tmp_path / "big.privdash"
    path.write_bytes(b" " * 2_000)
    with pytest.raises(DataReadError, match="larger than"):
        Project.load(path, max_bytes=1_000)
    with pytest.raises(DataReadError, match="Cannot read"):
        Project.load(tmp_path / "absent.privdash")
    with pytest.raises(ParameterError, match="sign-off field name"):
        project.with_signoff(name="x" * 5_000)


# --- the dashboard's view state ---------------------------------------------------------------------------------------


@pytest.fixture
def services(tmp_path: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache"))


def test_a_view_state_round_trips_through_a_project(services: Services) -> None:
    loaded = services.dataset("demo:people")
    search = {"kind": "search", "k": 7, "max_suppression": 0.05, "pick": 3}
    state = services.initial_state(loaded).updated(
        k=7, max_risk=0.1, violating=True, release={"global_risk": 0.02}, fix=(search,)
    )
    state = state.with_quasi_identifiers(["age", "sex"], ["diagnosis"])
    project = project_from_state(services, state, signoff={"name": "Ann"}, identity="People 2024")
    assert project.origin == "demo:people" and project.ledger == LedgerReference("People 2024")
    text = project.to_bytes()
    assert loaded.frame["email"].iloc[0].encode() not in text and loaded.frame["name"].iloc[0].encode() not in text
    opened = open_project(services, Project.from_bytes(text), current=ViewState())
    assert opened.differences is not None and opened.differences.same
    assert opened.state == state.updated(hierarchies=None)


def test_a_project_with_its_table_re_creates_the_dataset(services: Services) -> None:
    frame = pd.DataFrame({"age": [30, 40, 30, 50], "sex": ["F", "M", "F", "M"], "job": ["a", "b", "a", SECRET]})
    info = services.store.save(frame, session="s" * 30, filename="jobs.csv", contract={})
    loaded = services.dataset(info.id)
    state = services.initial_state(loaded).with_quasi_identifiers(["age", "sex"], ["job"]).updated(k=3)
    project = project_from_state(services, state, include_table=True)
    assert project.table is not None
    opened = open_project(services, Project.from_bytes(project.to_bytes()), current=ViewState(), session="t" * 30)
    assert opened.state.dataset != info.id and opened.differences is not None and opened.differences.same
    assert opened.state.k == 3 and opened.state.quasi_identifiers == ("age", "sex")
    assert services.dataset(str(opened.state.dataset)).frame["job"].tolist() == frame["job"].tolist()
    # Without the table, an upload's project opens against the open table, or asks for it.
    bare = project_from_state(services, state)
    with pytest.raises(Exception, match="upload the table first"):
        open_project(services, bare, current=ViewState())
    other = services.store.save(frame.iloc[:3], session="s" * 30, filename="jobs2.csv", contract={})
    against = open_project(services, bare, current=ViewState(dataset=other.id))
    assert against.differences is not None and against.differences.rows == (4, 3)


def test_hierarchies_and_orders_come_back_with_the_project(services: Services) -> None:
    frame = pd.DataFrame(
        {"age": [23, 35, 47, 59, 61, 33] * 4, "size": ["S", "M", "L", "M", "S", "L"] * 4, "job": list("abcdef") * 4}
    )
    info = services.store.save(frame, session="s" * 30, filename="sizes.csv", contract={})
    loaded = services.dataset(info.id)
    state = services.initial_state(loaded).with_quasi_identifiers(["age", "size"], ["job"])
    state = state.with_columns(types={"size": "ORDINAL"})
    state = state_with_order(loaded, state, "size", ["S", "M", "L"])
    state = hs.edit_column(services, state, "age", {"builder": "intervals", "widths": [10, 20], "low": 20, "high": 80})
    project = project_from_state(services, state, include_table=True)
    assert set(project.hierarchies) == {"age"} and project.contract.ordinal_orders() == {"size": ("S", "M", "L")}
    opened = open_project(services, Project.from_bytes(project.to_bytes()), session="t" * 30).state
    reopened = services.dataset(str(opened.dataset))
    assert current_order(services, reopened, opened, "size") == ["S", "M", "L"]
    kept = hs.dataset_hierarchies(services, opened).columns["age"]
    assert kept.hierarchy.to_dict() == hs.dataset_hierarchies(services, state).columns["age"].hierarchy.to_dict()


def test_the_recipe_of_steps_the_fix_page_applied_goes_into_the_project(services: Services) -> None:
    age = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
    state = services.initial_state(services.dataset("demo:people")).updated(fix=(age,))
    assert project_from_state(services, state).recipe is None  # not applied yet: nothing is computed to save
    FixRuns(services).run(state)
    recipe = project_from_state(services, state).recipe
    assert recipe is not None and [step.kind for step in recipe.steps] == ["generalize"]


def test_a_null_table_does_not_lift_the_settings_limit(project: Project) -> None:
    obj = json.loads(project.to_bytes())
    obj["table"] = None
    obj["dataset"]["title"] = "x" * (MAX_SETTINGS_BYTES + 1)
    with pytest.raises(DataReadError, match="settings"):
        Project.from_bytes(json.dumps(obj).encode())
