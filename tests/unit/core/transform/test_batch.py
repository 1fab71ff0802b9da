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
from privdash.transform.batch import BatchJobError, BatchJobResult, load_batch_job, parse_batch_job, run_batch_file

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
    result = run_batch_file(job_dir / "job.json")
    assert (job_dir / "in.csv").read_bytes() == before  # never overwrites the input
    source = read_table(job_dir / "in.csv")
    out = read_table(job_dir / "out.csv")
    assert out.shape == source.shape and list(out.columns) == list(source.columns)
    for name in source.columns:
        if name not in QIS:
            assert out[name].equals(source[name]), name  # every other column, in the same row order
    assert equivalence_classes(out, QIS).k >= 3
    assert equivalence_classes(out, QIS, missing="wildcard").k >= 3
    assert isinstance(result, BatchJobResult)
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
    run_batch_file(job_dir / "job.json")
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
    result = run_batch_file(write_job(tmp_path, job))
    out = pd.read_parquet(tmp_path / "adult_out.parquet")
    assert equivalence_classes(out, ["age", "sex", "education"]).k >= 5
    assert result.k_achieved >= 5
    assert (out["age"] % 1 == 0).all()  # decimals = 0
    assert set(out["education"]) <= set(education)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda j: j.pop("source"), BatchJobError, "no 'source'"),
        (lambda j: j.pop("contract"), BatchJobError, "no 'contract'"),
        (lambda j: j.pop("aggregation_config"), BatchJobError, "no 'aggregation_config'"),
        (lambda j: j.update(sourse={"path": "x"}), BatchJobError, "did you mean 'source'"),
        (lambda j: j["source"].update(path=""), BatchJobError, "non-empty"),
        (lambda j: j["source"].update(format="csv"), BatchJobError, "Unknown key in 'source'"),
        (lambda j: j["aggregation_config"].update(minimum_k_anonymity=1), ParameterError, "at least 2"),
        (lambda j: j["aggregation_config"].update(minimum_k_anonymity="3"), ParameterError, "whole number"),
        (lambda j: j["aggregation_config"].pop("minimum_k_anonymity"), BatchJobError, "needs 'minimum_k_anonymity'"),
        (lambda j: j["aggregation_config"].update(minimum_k=3), BatchJobError, "did you mean"),
        (lambda j: j.update(target={"path": "in.csv"}), BatchJobError, "is the source"),
        (lambda j: j.update(target={"path": "contract.json"}), BatchJobError, "is the contract"),
        (lambda j: j.update(target={"path": "job.json"}), BatchJobError, "is the job file"),
        (lambda j: j.update(target={"path": "missing/out.csv"}), BatchJobError, "does not exist"),
        (lambda j: j.update(target={"path": "out.xlsx"}), BatchJobError, "Cannot write"),
        (lambda j: j.update(contract="nope.json"), ContractError, "not found"),
        (lambda j: j.update(contract=7), BatchJobError, "'contract' must be"),
        (lambda j: j.update(contract={"field_metadata": []}), ContractError, "no column as a quasi-identifier"),
    ],
)
def test_config_errors(job_dir: Path, change, error: type[Exception], message: str) -> None:
    job = json.loads(json.dumps(JOB))
    change(job)
    path = write_job(job_dir, job)
    with pytest.raises(error, match=message):
        load_batch_job(path)
    assert not (job_dir / "out.csv").exists()


def test_file_errors(job_dir: Path) -> None:
    with pytest.raises(BatchJobError, match="Job file not found"):
        run_batch_file(job_dir / "absent.json")
    (job_dir / "bad.json").write_text("{not json")
    with pytest.raises(BatchJobError, match="not valid JSON"):
        run_batch_file(job_dir / "bad.json")
    with pytest.raises(BatchJobError, match="JSON object"):
        parse_batch_job([1, 2])
    missing_source = write_job(job_dir, {**JOB, "source": {"path": "absent.csv"}}, "j2.json")
    with pytest.raises(DataReadError, match="File not found"):
        run_batch_file(missing_source)


def test_contract_that_does_not_fit_the_data(job_dir: Path) -> None:
    contract = json.loads(json.dumps(CONTRACT))
    contract["field_metadata"][0]["field_name"] = "urban"
    (job_dir / "contract.json").write_text(json.dumps(contract))
    with pytest.raises(ContractError, match=r"does not fit in\.csv.*urban"):
        run_batch_file(job_dir / "job.json")
    contract = json.loads(json.dumps(CONTRACT))
    contract["field_metadata"][4]["ordinal_values"] = [1, 2, 3]
    (job_dir / "contract.json").write_text(json.dumps(contract))
    with pytest.raises(ContractError, match="ordinal_values"):
        run_batch_file(job_dir / "job.json")


def test_plain_path_strings_and_too_few_rows(job_dir: Path) -> None:
    small = read_table(job_dir / "in.csv").head(2)
    small.to_csv(job_dir / "small.csv", index=False)
    path = write_job(job_dir, {**JOB, "source": "small.csv", "target": "small_out.csv"}, "j3.json")
    with pytest.raises(ParameterError, match="fewer than k"):
        run_batch_file(path)
    assert not (job_dir / "small_out.csv").exists()


def test_the_old_jobs_module_is_read_with_a_deprecation_warning() -> None:
    import importlib
    import sys

    from privdash.transform import batch

    sys.modules.pop("privdash.transform.jobs", None)
    with pytest.warns(DeprecationWarning, match="privdash.transform.batch"):
        old = importlib.import_module("privdash.transform.jobs")
    with pytest.warns(DeprecationWarning, match="run_batch_file"):
        assert old.run_job_file is batch.run_batch_file
    with pytest.raises(AttributeError):
        _ = old.no_such_name
