from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from privdash.data.tables import read_table
from privdash.errors import ContractError, DataReadError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.transform.jobs import JobConfigError, JobResult, load_job, parse_job, run_job_file

QIS = ["urbrur", "water", "sex", "age", "relat"]
CONTRACT = {
    "field_metadata": [
        {"field_name": "urbrur", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "NOMINAL"},
        {"field_name": "water", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "NOMINAL"},
        {"field_name": "sex", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "NOMINAL"},
        {"field_name": "age", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "NUMERICAL"},
        {"field_name": "relat", "personal_data_config": {"is_quasi_id": True},
         "statistical_data_type": "ORDINAL", "ordinal_values": [1, 2, 3, 4, 5, 6, 7, 8, 9]},
        {"field_name": "income", "personal_data_config": {"is_sensitive": True}, "statistical_data_type": "NUMERICAL"},
        {"field_name": "ori_hid", "personal_data_config": {"is_direct_id": True}, "statistical_data_type": "NOMINAL"},
    ]
}  # fmt: skip
JOB = {
    "source": {"path": "in.csv"},
    "target": {"path": "out.csv"},
    "contract": "contract.json",
    "aggregation_config": {"minimum_k_anonymity": 3},
}


@pytest.fixture
def job_dir(tmp_path: Path, data_dir: Path) -> Path:
    shutil.copyfile(data_dir / "sdcmicro_testdata" / "testdata.csv", tmp_path / "in.csv")
    (tmp_path / "contract.json").write_text(json.dumps(CONTRACT))
    (tmp_path / "job.json").write_text(json.dumps(JOB))
    return tmp_path


def write_job(folder: Path, job: dict, name: str = "job.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(job))
    return path


def test_issue_shape_runs_end_to_end(job_dir: Path) -> None:
    before = (job_dir / "in.csv").read_bytes()
    result = run_job_file(job_dir / "job.json")
    assert (job_dir / "in.csv").read_bytes() == before  # never overwrites the input
    source = read_table(job_dir / "in.csv")
    out = read_table(job_dir / "out.csv")
    assert out.shape == source.shape and list(out.columns) == list(source.columns)
    for name in source.columns:
        if name not in QIS:
            assert out[name].equals(source[name]), name  # every other column, in the same row order
    assert equivalence_classes(out, QIS).k >= 3
    assert equivalence_classes(out, QIS, missing="wildcard").k >= 3
    assert isinstance(result, JobResult)
    assert result.rows == len(source) and result.columns == source.shape[1]
    assert result.k_requested == 3 and result.k_achieved >= 3
    assert result.quasi_identifiers == tuple(QIS)
    assert "age" in result.columns_changed and set(result.columns_changed) <= set(QIS)
    assert result.target == (job_dir / "out.csv").resolve()
    assert json.loads(json.dumps(result.to_dict()))["k_requested"] == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rows = 0  # type: ignore[misc]


def test_relative_paths_are_relative_to_the_job_file(job_dir: Path, tmp_path_factory, monkeypatch) -> None:
    elsewhere = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(elsewhere)
    run_job_file(job_dir / "job.json")
    assert (job_dir / "out.csv").is_file() and not (elsewhere / "out.csv").exists()


def test_adult_with_an_ordinal_contract(tmp_path: Path, data_dir: Path) -> None:
    education = [
        "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad", "Some-college",
        "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate",
    ]  # fmt: skip
    contract = {
        "field_metadata": [
            {"field_name": "age", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "NUMERICAL"},
            {"field_name": "sex", "personal_data_config": {"is_quasi_id": True}, "statistical_data_type": "NOMINAL"},
            {"field_name": "education", "personal_data_config": {"is_quasi_id": True},
             "statistical_data_type": "ORDINAL", "ordinal_values": education},
        ]
    }  # fmt: skip
    job = {
        "source": {"path": str(data_dir / "arx_adult" / "adult_subset.csv")},
        "target": {"path": "adult_out.parquet"},
        "contract": contract,
        "aggregation_config": {"minimum_k_anonymity": 5, "decimals": 0},
    }
    result = run_job_file(write_job(tmp_path, job))
    out = pd.read_parquet(tmp_path / "adult_out.parquet")
    assert equivalence_classes(out, ["age", "sex", "education"]).k >= 5
    assert result.k_achieved >= 5
    assert (out["age"] % 1 == 0).all()  # decimals = 0
    assert set(out["education"]) <= set(education)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda j: j.pop("source"), JobConfigError, "no 'source'"),
        (lambda j: j.pop("contract"), JobConfigError, "no 'contract'"),
        (lambda j: j.pop("aggregation_config"), JobConfigError, "no 'aggregation_config'"),
        (lambda j: j.update(sourse={"path": "x"}), JobConfigError, "did you mean 'source'"),
        (lambda j: j["source"].update(path=""), JobConfigError, "non-empty"),
        (lambda j: j["source"].update(format="csv"), JobConfigError, "Unknown key in 'source'"),
        (lambda j: j["aggregation_config"].update(minimum_k_anonymity=1), ParameterError, "at least 2"),
        (lambda j: j["aggregation_config"].update(minimum_k_anonymity="3"), ParameterError, "whole number"),
        (lambda j: j["aggregation_config"].pop("minimum_k_anonymity"), JobConfigError, "needs 'minimum_k_anonymity'"),
        (lambda j: j["aggregation_config"].update(minimum_k=3), JobConfigError, "did you mean"),
        (lambda j: j.update(target={"path": "in.csv"}), JobConfigError, "is the source"),
        (lambda j: j.update(target={"path": "contract.json"}), JobConfigError, "is the contract"),
        (lambda j: j.update(target={"path": "job.json"}), JobConfigError, "is the job file"),
        (lambda j: j.update(target={"path": "missing/out.csv"}), JobConfigError, "does not exist"),
        (lambda j: j.update(target={"path": "out.xlsx"}), JobConfigError, "Cannot write"),
        (lambda j: j.update(contract="nope.json"), ContractError, "not found"),
        (lambda j: j.update(contract=7), JobConfigError, "'contract' must be"),
        (lambda j: j.update(contract={"field_metadata": []}), ContractError, "no column as a quasi-identifier"),
    ],
)
def test_config_errors(job_dir: Path, change, error: type[Exception], message: str) -> None:
    job = json.loads(json.dumps(JOB))
    change(job)
    path = write_job(job_dir, job)
    with pytest.raises(error, match=message):
        load_job(path)
    assert not (job_dir / "out.csv").exists()


def test_file_errors(job_dir: Path) -> None:
    with pytest.raises(JobConfigError, match="Job file not found"):
        run_job_file(job_dir / "absent.json")
    (job_dir / "bad.json").write_text("{not json")
    with pytest.raises(JobConfigError, match="not valid JSON"):
        run_job_file(job_dir / "bad.json")
    with pytest.raises(JobConfigError, match="JSON object"):
        parse_job([1, 2])
    missing_source = write_job(job_dir, {**JOB, "source": {"path": "absent.csv"}}, "j2.json")
    with pytest.raises(DataReadError, match="File not found"):
        run_job_file(missing_source)


def test_contract_that_does_not_fit_the_data(job_dir: Path) -> None:
    contract = json.loads(json.dumps(CONTRACT))
    contract["field_metadata"][0]["field_name"] = "urban"
    (job_dir / "contract.json").write_text(json.dumps(contract))
    with pytest.raises(ContractError, match=r"does not fit in\.csv.*urban"):
        run_job_file(job_dir / "job.json")
    contract = json.loads(json.dumps(CONTRACT))
    contract["field_metadata"][4]["ordinal_values"] = [1, 2, 3]
    (job_dir / "contract.json").write_text(json.dumps(contract))
    with pytest.raises(ContractError, match="ordinal_values"):
        run_job_file(job_dir / "job.json")


def test_plain_path_strings_and_too_few_rows(job_dir: Path) -> None:
    small = read_table(job_dir / "in.csv").head(2)
    small.to_csv(job_dir / "small.csv", index=False)
    path = write_job(job_dir, {**JOB, "source": "small.csv", "target": "small_out.csv"}, "j3.json")
    with pytest.raises(ParameterError, match="fewer than k"):
        run_job_file(path)
    assert not (job_dir / "small_out.csv").exists()
