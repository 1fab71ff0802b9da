"""Person-level classes (several rows per person) are the same on Spark and PostgreSQL as on pandas and the
brute-force oracle, to the last digit.

Random visit tables (missing QI and sensitive values, repeated tuples, one weight per person) are grouped by
(person, QIs, sensitive, weight) where they live: in a local Spark session (``local[2]``, from Parquet files) and in
a real PostgreSQL server (:mod:`tests.integration.engines.postgres`). The diagnoses must equal the pandas one in
every JSON number, per-class array and class key, and the oracle's counts of people.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from privdash.engines.aggregate import DatabaseSource
from privdash.engines.spark import spark_session
from privdash.errors import ColumnError
from privdash.measure.diagnose import diagnose
from tests.integration.engines.postgres import PostgresServer, ServerUnavailable, load_frame, running_postgres
from tests.unit.core.engines.test_aggregate import same
from tests.unit.core.measure.test_entities import QIS, comparable, diagnosis_matches_oracle, oracle, random_table

SEEDS = [21, 22, 23]
CASES = [(seed, key, missing) for seed in SEEDS for key in ("set", "multiset") for missing in ("value", "drop")]


def _options(key: str, missing: str) -> dict[str, Any]:
    return {"sensitive": ["dx"], "entity": "pid", "entity_key": key, "missing": missing, "weights": "weight"}


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    warehouse = str(tmp_path_factory.mktemp("warehouse"))
    session = spark_session(
        "local[2]", config={"spark.sql.shuffle.partitions": "4", "spark.sql.warehouse.dir": warehouse}
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    try:
        with running_postgres() as running:
            with running.connect() as connection:
                for seed in SEEDS:
                    load_frame(connection, f"visits_{seed}", random_table(seed))
                load_frame(
                    connection, "no_ids", random_table(SEEDS[0]).assign(pid=lambda f: f["pid"].where(f.index % 7 > 0))
                )
            yield running
    except ServerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.mark.parametrize(("seed", "key", "missing"), CASES)
def test_spark_equals_pandas_and_the_oracle(spark: Any, tmp_path: Path, seed: int, key: str, missing: str) -> None:
    frame = random_table(seed)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "visits.parquet")
    memory = diagnose(frame, QIS, **_options(key, missing), engine="pandas")
    counted = diagnose(spark.read.parquet(str(tmp_path / "visits.parquet")), QIS, **_options(key, missing))
    assert counted.engine == "spark" and counted.rows == len(frame)
    diagnosis_matches_oracle(counted, oracle(frame, key, missing))
    assert same(comparable(memory), comparable(counted)) == []


@pytest.mark.parametrize(("seed", "key", "missing"), CASES)
def test_postgresql_equals_pandas_and_the_oracle(server: PostgresServer, seed: int, key: str, missing: str) -> None:
    frame = random_table(seed)
    memory = diagnose(frame, QIS, **_options(key, missing), engine="pandas")
    counted = diagnose(DatabaseSource(server.url(), table=f"visits_{seed}"), QIS, **_options(key, missing))
    assert counted.engine == "postgresql" and counted.rows == len(frame)
    diagnosis_matches_oracle(counted, oracle(frame, key, missing))
    assert same(comparable(memory), comparable(counted)) == []


def test_missing_person_ids_are_counted_in_the_database(server: PostgresServer) -> None:
    frame = random_table(SEEDS[0])
    expected = int((frame.index % 7 == 0).sum())
    with pytest.raises(ColumnError, match=rf"^{expected} row\(s\) have no value in the person-id column 'pid'"):
        diagnose(DatabaseSource(server.url(), table="no_ids"), QIS, entity="pid")
