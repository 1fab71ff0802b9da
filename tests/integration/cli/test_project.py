"""``privdash project save/show/check`` and ``--project`` on diagnose, anonymize and report: the project supplies the
options not given, the table is checked against its fingerprint (a warning, or exit 2 for a missing column), and a
damaged project is exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.project import Project
from privdash.cli import main
from privdash.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType

SECRET = "zz-rare-job-5521"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def table(tmp_path: Path) -> Path:
    frame = pd.DataFrame(
        {
            "age": [30, 40, 30, 50, 40, 30, 50, 40] * 5,
            "sex": ["F", "M"] * 20,
            "job": ["clerk", "nurse", "cook", "clerk", SECRET, "nurse", "cook", "clerk"] * 5,
        }
    )
    path = tmp_path / "jobs.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def project(capsys: pytest.CaptureFixture[str], table: Path, tmp_path: Path) -> Path:
    recipe = tmp_path / "recipe.json"
    recipe.write_text(
        json.dumps(
            {"privdash_recipe": 1, "steps": [{"kind": "top_bottom_coding", "params": {"column": "age", "top": 45}}]}
        )
    )
    out = tmp_path / "jobs.privdash"
    code, stdout, err = run(
        capsys,
        "project", "save", str(table), "-o", str(out), "--qi", "age,sex", "--sensitive", "job",
        "--targets", "k=4,max_risk=0.3", "--missing", "wildcard", "--recipe", str(recipe),
        "--signoff-name", "Ann Steward", "--signoff-decision", "approve", "--identity", "Jobs 2024",
    )  # fmt: skip
    assert code == 0, err
    assert "no data value" in stdout
    return out


def test_save_writes_no_data_value_and_show_prints_the_parts(
    capsys: pytest.CaptureFixture[str], project: Path, table: Path, tmp_path: Path
) -> None:
    assert SECRET.encode() not in project.read_bytes()
    code, stdout, _ = run(capsys, "project", "show", str(project))
    assert code == 0
    assert "age, sex" in stdout and "k=4" in stdout and "Ann Steward" in stdout and "Jobs 2024" in stdout
    code, stdout, _ = run(capsys, "project", "show", str(project), "--json")
    assert code == 0 and json.loads(stdout)["missing"] == "wildcard"
    with_table = tmp_path / "with.privdash"
    code, _, err = run(capsys, "project", "save", str(table), "-o", str(with_table), "--qi", "age", "--include-table")
    assert code == 0, err
    kept = Project.load(with_table).table_frame()
    assert kept is not None and SECRET in set(kept["job"])


def test_check_says_what_differs(
    capsys: pytest.CaptureFixture[str], project: Path, table: Path, tmp_path: Path
) -> None:
    code, stdout, _ = run(capsys, "project", "check", str(project), str(table))
    assert code == 0 and "the table the project was saved with" in stdout
    other = tmp_path / "other.csv"
    pd.read_csv(table).iloc[:30].assign(town="York").to_csv(other, index=False)
    code, stdout, _ = run(capsys, "project", "check", str(project), str(other))
    assert code == 1 and "40 rows; this table has 30" in stdout and "'town'" in stdout
    pd.read_csv(table).drop(columns="sex").to_csv(other, index=False)
    code, _, err = run(capsys, "project", "check", str(project), str(other))
    assert code == 2 and "'sex'" in err


def test_diagnose_takes_the_project_s_contract_targets_and_missing_policy(
    capsys: pytest.CaptureFixture[str], project: Path, table: Path, tmp_path: Path
) -> None:
    code, stdout, err = run(capsys, "diagnose", str(table), "--project", str(project), "--json")
    payload = json.loads(stdout)
    assert payload["quasi_identifiers"] == ["age", "sex"]
    assert "warning" not in err
    assert code == 0 and [check["target"] for check in payload["verdict"]["checks"]] == ["k", "max_risk"]
    assert payload["verdict"]["checks"][0]["required"] == 4 and payload["missing_policy"] == "wildcard"
    # An explicit option overrides the project.
    code, stdout, _ = run(capsys, "diagnose", str(table), "--project", str(project), "--qi", "age", "--json")
    assert json.loads(stdout)["quasi_identifiers"] == ["age"]
    # Another table: a warning naming what differs; a missing column the project uses: exit 2.
    other = tmp_path / "other.csv"
    pd.read_csv(table).iloc[:20].to_csv(other, index=False)
    code, _, err = run(capsys, "diagnose", str(other), "--project", str(project))
    assert code in (0, 1) and "warning: the table is not the one the project was saved with" in err
    assert "40 rows; this table has 20" in err
    pd.read_csv(table).drop(columns="job").to_csv(other, index=False)
    code, _, err = run(capsys, "diagnose", str(other), "--project", str(project))
    assert code == 2 and "lacks column(s) the project uses: 'job'" in err


def test_diagnose_exit_status_follows_the_project_s_targets(
    capsys: pytest.CaptureFixture[str], table: Path, tmp_path: Path
) -> None:
    strict, loose = tmp_path / "strict.privdash", tmp_path / "loose.privdash"
    run(capsys, "project", "save", str(table), "-o", str(strict), "--qi", "age,sex", "--targets", "k=100")
    run(capsys, "project", "save", str(table), "-o", str(loose), "--qi", "age,sex", "--targets", "k=2")
    assert run(capsys, "diagnose", str(table), "--project", str(strict))[0] == 1
    assert run(capsys, "diagnose", str(table), "--project", str(loose))[0] == 0


def test_anonymize_re_applies_the_project_s_recipe(
    capsys: pytest.CaptureFixture[str], project: Path, table: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.csv"
    code, stdout, err = run(capsys, "anonymize", str(table), "--project", str(project), "-o", str(out))
    assert code == 0, err
    assert pd.read_csv(out)["age"].max() <= 45
    # With search options the project supplies the QIs and targets instead.
    searched = tmp_path / "searched.csv"
    code, stdout, err = run(
        capsys, "anonymize", str(table), "--project", str(project), "--k", "8", "-o", str(searched), "--json"
    )
    assert code == 0, err
    assert set(json.loads(stdout)["levels"]) == {"age", "sex"} and json.loads(stdout)["k"] >= 8


def test_report_carries_the_sign_off_fields(
    capsys: pytest.CaptureFixture[str], project: Path, table: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    code, _, err = run(capsys, "report", str(table), "--project", str(project), "-o", str(out))
    assert code == 0, err
    html = out.read_text(encoding="utf-8")
    # Filled in the sign-off block: the name as the input's value, the project's decision checked, the rest empty.
    assert 'name="name"\n      value="Ann Steward"' in html
    assert 'value="approve" checked>' in html and 'value="reject">' in html
    assert 'id="signoff-role" name="role"\n      value=""' in html
    pdf = tmp_path / "report.pdf"
    code, _, err = run(capsys, "report", str(table), "--project", str(project), "-o", str(pdf))
    assert code == 0, err
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    signoff = text[text.rindex("Sign-off") :]
    assert "Ann Steward" in signoff and "✕Approverelease" in signoff.replace(" ", "")


@pytest.mark.parametrize("content", [b"{not json", b'{"format": "privdash-project", "version": 7}'])
def test_a_damaged_or_newer_project_is_exit_2(
    capsys: pytest.CaptureFixture[str], table: Path, tmp_path: Path, content: bytes
) -> None:
    bad = tmp_path / "bad.privdash"
    bad.write_bytes(content)
    for command in (["diagnose"], ["anonymize"], ["report", "-o", str(tmp_path / "r.html")]):
        code, _, err = run(capsys, *command, str(table), "--project", str(bad))
        assert code == 2 and ("not a privdash project" in err or "newer privdash" in err), err


def test_save_keeps_a_contract_s_orders_and_hierarchies_with_the_roles_given(
    capsys: pytest.CaptureFixture[str], table: Path, tmp_path: Path
) -> None:
    contract = {
        **DataContract(
            (
                FieldMetadata("age", ColumnRole.QUASI_IDENTIFIER, StatisticalType.NUMERICAL),
                FieldMetadata("sex", ColumnRole.QUASI_IDENTIFIER, StatisticalType.ORDINAL, ("M", "F")),
                FieldMetadata("job", ColumnRole.INSENSITIVE, StatisticalType.NOMINAL),
            )
        ).to_dict(),
        "hierarchies": {"age": {"source": "editor", "settings": {"builder": "intervals", "widths": [10, 20]}}},
    }
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(contract))
    out = tmp_path / "c.privdash"
    code, _, err = run(
        capsys, "project", "save", str(table), "-o", str(out), "--contract", str(path), "--sensitive", "job"
    )
    assert code == 0, err
    project = Project.load(out)
    assert project.contract.quasi_identifiers == ("age", "sex") and project.contract.sensitive == ("job",)
    assert project.contract.ordinal_orders() == {"sex": ("M", "F")} and set(project.hierarchies) == {"age"}
    contract["hierarchies"] = {"town": {"source": "editor", "settings": {"builder": "intervals", "widths": [10]}}}
    path.write_text(json.dumps(contract))
    code, _, err = run(capsys, "project", "save", str(table), "-o", str(out), "--contract", str(path))
    assert code == 2 and "'town'" in err


def test_anonymize_searches_with_the_project_s_hierarchies(
    capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    adult, hierarchies = data_dir / "arx_adult" / "adult_subset.csv", data_dir / "arx_adult" / "hierarchies"
    project = tmp_path / "adult.privdash"
    code, _, err = run(
        capsys, "project", "save", str(adult), "-o", str(project), "--qi", "sex,age,race",
        "--hierarchies", str(hierarchies), "--targets", "k=5",
    )  # fmt: skip
    assert code == 0, err
    out = tmp_path / "out.csv"
    code, stdout, err = run(capsys, "anonymize", str(adult), "--project", str(project), "-o", str(out), "--json")
    assert code == 0, err
    assert "no --hierarchies given" not in err  # the project's ARX hierarchies, not the defaults
    published = pd.read_csv(out, sep=None, engine="python")
    levels = json.loads(stdout)["levels"]
    assert json.loads(stdout)["k"] >= 5 and set(levels) == {"sex", "age", "race"}
    if levels["age"] > 0:
        assert not published["age"].astype(str).str.fullmatch(r"\d+").all()


def test_release_and_synthesize_charge_the_project_s_population_in_its_ledger(
    capsys: pytest.CaptureFixture[str], table: Path, tmp_path: Path
) -> None:
    from privdash.dp.ledger import BudgetLedger

    ledger, project = tmp_path / "ledger.json", tmp_path / "jobs.privdash"
    code, _, err = run(
        capsys,
        "project", "save", str(table), "-o", str(project), "--qi", "age,sex", "--sensitive", "job",
        "--identity", "Jobs 2024", "--ledger", str(ledger),
    )  # fmt: skip
    assert code == 0, err
    code, _, err = run(
        capsys, "release", str(table), "--project", str(project), "--query", "count", "--epsilon", "0.5",
        "--budget", "10",
    )  # fmt: skip
    assert code == 0, err
    (entry,) = BudgetLedger.load(ledger).account("Jobs 2024").entries
    assert entry.epsilon == 0.5
    # synthesize also takes the contract's quasi-identifiers and its sensitive attribute for the attacks.
    code, stdout, err = run(
        capsys, "synthesize", str(table), "--project", str(project), "--method", "dp", "--epsilon", "4",
        "--columns", "age,sex,job", "--bounds", "age=20:60", "--bins", "2", "--domain", "sex=F,M",
        "--domain", "job=clerk,nurse,cook", "--control-share", "0", "-o", str(tmp_path / "s.csv"), "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(stdout)["attacks"]["quasi_identifiers"] == ["age", "sex"]
    entries = BudgetLedger.load(ledger).account("Jobs 2024").entries
    assert [e.epsilon for e in entries] == [0.5, 4.0]
    # An option given overrides the project: another ledger file; a copy of the table cannot open a new budget.
    other = tmp_path / "other-ledger.json"
    code, _, err = run(
        capsys, "release", str(table), "--project", str(project), "--query", "count", "--epsilon", "0.5",
        "--budget", "1", "--ledger", str(other),
    )  # fmt: skip
    assert code == 0, err
    assert len(BudgetLedger.load(other).account("Jobs 2024").entries) == 1
    code, _, err = run(
        capsys, "release", str(table), "--project", str(project), "--query", "count", "--epsilon", "0.5",
        "--dataset-identity", "Other people", "--budget", "1",
    )  # fmt: skip
    assert code == 2 and "released under the dataset identity 'Jobs 2024'" in err
