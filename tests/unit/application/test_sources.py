"""Server-side sources: configured by the administrator, diagnosed where they live, refused where every row would be
needed in memory."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash import ParameterError, diagnose, read_table
from privdash.application.fixruns import FixRuns
from privdash.application.services import PREVIEW_ROWS, Services
from privdash.application.settings import Settings
from privdash.application.sources import SourceError, load_sources
from privdash.engines import DatabaseSource

ADULT_QIS = ["sex", "age", "race", "marital-status", "education"]


@pytest.fixture(scope="module")
def lake(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """Adult as a Parquet dataset of three files, as a data lake keeps it."""
    adult = read_table(data_dir / "arx_adult" / "adult.csv")
    folder = tmp_path_factory.mktemp("lake") / "adult"
    folder.mkdir()
    for i in range(3):
        adult.iloc[i * 10_054 : (i + 1) * 10_054].to_parquet(folder / f"part-{i}.parquet", index=False)
    return folder, adult


def services_with(tmp_path: Path, sources: dict) -> Services:
    path = tmp_path / "sources.json"
    path.write_text(json.dumps(sources), encoding="utf-8")
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", sources_file=path))


def test_a_parquet_source_is_diagnosed_over_all_its_rows(lake, tmp_path: Path) -> None:
    folder, adult = lake
    services = services_with(tmp_path, {"adult": {"title": "Adult lake", "path": str(folder / "*.parquet")}})
    choice = next(c for c in services.demo_choices() if c["value"] == "source:adult")
    assert choice["label"].startswith("Adult lake (server source:") and str(folder) not in choice["label"]
    loaded = services.dataset("source:adult")
    assert len(loaded.frame) == PREVIEW_ROWS < len(adult)
    assert loaded.frame.equals(adult.head(PREVIEW_ROWS))
    state = services.initial_state(loaded).with_quasi_identifiers(ADULT_QIS, ["occupation"])
    result = services.diagnosis(state)
    assert result.engine == "duckdb" and result.rows == len(adult)
    contract = services.contract(loaded, state)
    expected = diagnose(adult, contract=contract, k_values=result.k_values)
    left, right = result.to_dict(), expected.to_dict()
    for key in ("engine", "counting_seconds"):
        left.pop(key, None), right.pop(key, None)
    assert left == right


def test_steps_that_need_every_row_are_refused_for_a_source(lake, tmp_path: Path) -> None:
    folder, _ = lake
    services = services_with(tmp_path, {"adult": {"path": str(folder)}})
    loaded = services.dataset("source:adult")
    state = services.initial_state(loaded).with_quasi_identifiers(ADULT_QIS, [])
    with pytest.raises(SourceError, match=r"server-side source.*privdash anonymize SOURCE --engine duckdb"):
        FixRuns(services).run(state)


def test_a_database_source_never_shows_its_credentials(tmp_path: Path) -> None:
    services = services_with(
        tmp_path, {"db": {"title": "Admissions", "url": "postgresql://reader:s3cret@db/health", "table": "admissions"}}
    )
    labels = json.dumps(services.demo_choices())
    assert "s3cret" not in labels and "reader" not in labels and "Admissions" in labels
    assert services.sources["db"].engine == "postgresql"


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        ({"bad name!": {"path": "x"}}, "a name has 1 to 64"),
        ({"a": {"path": "x", "url": "postgresql://h/d"}}, "exactly one of 'path'"),
        ({"a": {"url": "postgresql://h/d"}}, "exactly one of 'table' and 'sql'"),
        ({"a": {"url": "postgresql://h/d", "sql": "SELECT 1", "query": "SELECT 2"}}, "not both"),
        ({"a": {"path": "x", "colour": "red"}}, "unknown key"),
        ({"a": {"path": "x", "engine": "oracle"}}, "engine"),
        ({"a": "x"}, "give an object"),
    ],
)
def test_bad_source_files_name_the_entry(tmp_path: Path, sources: dict, message: str) -> None:
    path = tmp_path / "sources.json"
    path.write_text(json.dumps(sources), encoding="utf-8")
    with pytest.raises(ParameterError, match=message):
        load_sources(path)


def test_the_sql_of_a_source_and_its_old_spelling(tmp_path: Path) -> None:
    path = tmp_path / "sources.json"
    url = "postgresql://reader@db/health"
    path.write_text(json.dumps({"new": {"url": url, "sql": "SELECT 1"}, "old": {"url": url, "query": "SELECT 1"}}))
    sources = load_sources(path)
    assert sources["new"].location == sources["old"].location == DatabaseSource(url, sql="SELECT 1")
    with pytest.warns(DeprecationWarning, match="sql="):
        assert DatabaseSource(url, query="SELECT 1") == DatabaseSource(url, sql="SELECT 1")
    with pytest.raises(TypeError, match="not both"):
        DatabaseSource(url, sql="SELECT 1", query="SELECT 1")


def test_unreadable_source_files(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="cannot read"):
        load_sources(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(ParameterError, match="not valid JSON"):
        load_sources(broken)
    assert load_sources(None) == {}


def test_the_setting_names_the_file(tmp_path: Path) -> None:
    settings = Settings.from_env({"PRIVDASH_SOURCES": str(tmp_path / "sources.json")})
    assert settings.sources_file == tmp_path / "sources.json"
    assert Settings.from_env({}).sources_file is None


def test_a_counted_source_is_ready_in_every_process(lake, tmp_path: Path) -> None:
    """A background job counts a source in its own process; the web worker that renders the class grid then finds the
    diagnosis on disk instead of counting again (two Services on one cache folder stand for the two processes)."""
    folder, adult = lake
    config = {"adult": {"title": "Adult lake", "path": str(folder / "*.parquet")}}
    worker, job = services_with(tmp_path, config), services_with(tmp_path, config)
    state = worker.initial_state(worker.dataset("source:adult")).with_quasi_identifiers(ADULT_QIS, [])
    assert not worker.diagnosis_ready(state) and not job.diagnosis_ready(state)
    counted = job.diagnosis(state)
    assert worker.diagnosis_ready(state)
    kept = worker.diagnosis(state)
    assert kept.to_dict() == counted.to_dict() and kept.rows == len(adult)
    # Another view of the same source is not ready until it is counted; a table in memory always is.
    other = state.with_quasi_identifiers(ADULT_QIS[:3], [])
    assert not worker.diagnosis_ready(other)
    demo = worker.initial_state(worker.dataset(worker.demo_choices()[0]["value"]))
    assert worker.diagnosis_ready(demo)
