"""Diagnosing in PostgreSQL gives the pandas engine's numbers to the last digit, on a real server.

A server started for this module (:mod:`tests.integration.engines.postgres`) holds the four public datasets of the
engine comparisons in tables typed after ``read_table``'s frames. The GROUP BY runs in the database; the diagnosis
must equal pandas' on the CSV (every number of ``--json`` and every per-class array), for a table and for a query,
through the Python API and the CLI. Bad sources fail with exit status 2 and one message that never shows the
password, and nothing is ever written to the database.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.engines.aggregate import COUNT, DatabaseSource, aggregate_table, sample_rows
from privdash.engines.database import redact_url
from privdash.measure.diagnose import diagnose
from tests.integration.engines.postgres import Datasets, PostgresServer, free_port, postgres_datasets
from tests.unit.core.engines.test_aggregate import CASES, per_class, same

__all__ = ["postgres_datasets"]  # the module-scoped server fixture, used by the tests below

ADULT_QIS = ["sex", "age", "race", "marital-status", "education"]


def _options(case: str, missing: str) -> dict[str, Any]:
    _, _, sensitive, weights = CASES[case]
    options: dict[str, Any] = {"sensitive": sensitive, "missing": missing, "weights": weights}
    if not weights:
        options["population"] = 10 * 78_000
    return options


def _comparable(diagnosis: Any) -> dict[str, Any]:
    out = diagnosis.to_dict()
    out.pop("engine")
    return dict(out)


@pytest.mark.parametrize("missing", ["value", "wildcard", "drop"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_postgresql_equals_pandas_to_the_last_digit(postgres_datasets: Datasets, case: str, missing: str) -> None:
    _, qis, _, _ = CASES[case]
    options = _options(case, missing)
    memory = diagnose(read_table(postgres_datasets.paths[case]), qis, **options, engine="pandas")
    database = diagnose(DatabaseSource(postgres_datasets.server.url(), table=case), qis, **options)  # auto
    assert memory.engine == "pandas" and database.engine == "postgresql"
    assert database.rows == len(postgres_datasets.frames[case])
    assert same(_comparable(memory), _comparable(database)) == []
    assert same(per_class(memory), per_class(database)) == []


def test_a_query_equals_pandas_on_the_same_rows(postgres_datasets: Datasets) -> None:
    adult = postgres_datasets.frames["adult"]
    url = postgres_datasets.server.url()
    query = """SELECT *, age / 10 * 10 AS decade FROM adult
               WHERE "salary-class" = '>50K' AND age >= 30 AND education NOT LIKE '%grad';"""
    chosen = adult[
        (adult["salary-class"] == ">50K") & (adult["age"] >= 30) & ~adult["education"].str.endswith("grad")
    ].reset_index(drop=True)
    chosen = chosen.assign(decade=chosen["age"] // 10 * 10)
    qis = ["sex", "decade", "race", "marital-status"]
    for missing in ("value", "drop"):
        memory = diagnose(chosen, qis, sensitive=["occupation"], missing=missing, engine="pandas")
        database = diagnose(DatabaseSource(url, sql=query), qis, sensitive=["occupation"], missing=missing)
        assert database.engine == "postgresql" and database.rows == len(chosen) < len(adult)
        assert same(_comparable(memory), _comparable(database)) == []
        assert same(per_class(memory), per_class(database)) == []


def test_types_are_the_readers_types_of_the_same_table_as_csv(postgres_datasets: Datasets, tmp_path: Path) -> None:
    # The oracle: the table written by PostgreSQL's own COPY ... CSV, read by read_table.
    with postgres_datasets.server.connect() as connection:
        connection.execute(
            """CREATE TABLE typed (small smallint, whole int, missing_int int, big bigint, ratio double precision,
                 single real, money_like numeric(10, 2), flag boolean, day date, moment timestamp, code char(4),
                 label varchar(10), note text, digits text)"""
        )
        connection.execute(
            """INSERT INTO typed VALUES
                 (1, 10, 7, 1234567890123456, 1.5, 0.1, 12.50, true, '2024-01-31', '2024-01-31 10:00', 'ab', 'x',
                  'NA', '12'),
                 (2, 20, NULL, NULL, 0.25, 2, 3.25, false, '2020-02-29', NULL, 'abcd', 'y', 'n', '7'),
                 (2, 20, 8, 5, 'NaN', 2, 3.25, NULL, NULL, '2000-01-01 00:00', NULL, NULL, NULL, '7')"""
        )
        csv = tmp_path / "typed.csv"
        with csv.open("wb") as handle, connection.cursor().copy("COPY typed TO STDOUT (FORMAT csv, HEADER)") as copy:
            for block in copy:
                handle.write(block)
    source = DatabaseSource(postgres_datasets.server.url(), table="typed")
    reader = read_table(csv)
    for name in reader.columns:
        if name in ("note", "digits"):
            continue
        database = aggregate_table(source, [name]).frame
        pandas = aggregate_table(csv, [name], engine="pandas").frame
        database, pandas = (f.sort_values(name, na_position="first").reset_index(drop=True) for f in (database, pandas))
        assert pd.api.types.is_numeric_dtype(database[name]) == pd.api.types.is_numeric_dtype(reader[name]), name
        assert database[name].dtype == reader[name].dtype, name
        assert same(database[name].tolist(), pandas[name].tolist()) == [], name
        assert database[COUNT].tolist() == pandas[COUNT].tolist(), name
    assert reader["missing_int"].dtype == "float64" and not pd.api.types.is_numeric_dtype(reader["big"])
    assert set(reader["flag"].dropna()) == {"t", "f"}
    # The database's types win over the reader's guesses: a text of digits stays text, "NA" is a value.
    kept = aggregate_table(source, ["digits", "note"]).frame
    assert set(kept["digits"]) == {"12", "7"} and "NA" in set(kept["note"])
    assert pd.api.types.is_integer_dtype(reader["digits"]) and reader["note"].isna().sum() == 2


def test_text_values_survive_the_transfer(postgres_datasets: Datasets) -> None:
    values = ["a,b", "line 1\nline 2", 'say "hi"', "", None, "", "  leading", "é€", "NULL", "\\N", None, "x"]
    with postgres_datasets.server.connect() as connection:
        connection.execute("CREATE TABLE texts (t text, n int)")
        with connection.cursor() as cursor:
            cursor.executemany("INSERT INTO texts VALUES (%s, %s)", [(v, i % 3) for i, v in enumerate(values)])
    database = aggregate_table(DatabaseSource(postgres_datasets.server.url(), table="texts"), ["t", "n"]).frame
    frame = pd.DataFrame({"t": pd.Series(values, dtype=object), "n": [i % 3 for i in range(len(values))]})
    memory = aggregate_table(frame, ["t", "n"], engine="pandas").frame

    def rows(aggregate: pd.DataFrame) -> list[tuple[Any, ...]]:
        cells = aggregate[["t", "n", COUNT]].astype(object).where(aggregate[["t", "n", COUNT]].notna(), None)
        return sorted(map(tuple, cells.to_numpy().tolist()), key=repr)

    assert rows(database) == rows(memory)
    # NULL and '' stay apart: two records of each.
    assert database.loc[database["t"].isna(), COUNT].sum() == database.loc[database["t"] == "", COUNT].sum() == 2


# --------------------------------------------------------------------------------------------------------- the CLI


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_on_a_table_equals_the_cli_on_the_csv(postgres_datasets: Datasets, capsys: Any) -> None:
    server = postgres_datasets.server
    common = ["--qi", ",".join(ADULT_QIS), "--sensitive", "occupation", "--population", "780000", "--json"]
    code, out, err = run(capsys, "diagnose", server.url(), "--table", "adult", *common)
    assert code == 0, err
    database = json.loads(out)
    code, out, err = run(capsys, "diagnose", str(postgres_datasets.paths["adult"]), *common)
    assert code == 0, err
    memory = json.loads(out)
    assert database.pop("engine") == "postgresql" and memory.pop("engine") == "pandas"
    assert same(database, memory) == [] and database["rows"] == 30162

    code, out, err = run(capsys, "diagnose", server.url(), "--table", "adult", "--qi", "sex,age")
    assert code == 0, err
    assert out.startswith(f"{redact_url(server.url())} table adult: 30,162 rows")
    assert "counted by postgresql" in out and server.password not in out + err

    query = "SELECT * FROM adult WHERE sex = 'Female'"
    code, out, err = run(capsys, "diagnose", server.url(), "--sql", query, "--qi", "sex,age", "--json")
    assert code == 0, err
    assert json.loads(out)["rows"] == int((postgres_datasets.frames["adult"]["sex"] == "Female").sum())


@pytest.fixture(scope="module")
def traps(postgres_datasets: Datasets) -> Iterator[PostgresServer]:
    """Things a query could use to write: a function that inserts into a log table, and a sequence."""
    server = postgres_datasets.server
    with server.connect() as connection:
        connection.execute("CREATE TABLE write_log (at timestamptz)")
        connection.execute(
            "CREATE FUNCTION log_read() RETURNS int LANGUAGE sql AS 'INSERT INTO write_log VALUES (now()) RETURNING 1'"
        )
        connection.execute("CREATE SEQUENCE counter")
    yield server


def _fingerprint(server: PostgresServer) -> tuple[Any, ...]:
    with server.connect() as connection:
        adult = connection.execute("SELECT count(*), md5(string_agg(a::text, '|' ORDER BY a::text)) FROM adult a")
        log = connection.execute("SELECT count(*) FROM write_log").fetchone()
        counter = connection.execute("SELECT is_called FROM counter").fetchone()
        return (*adult.fetchone(), log, counter)


BAD = {
    "closed port": (lambda s: [s.url(port=free_port()), "--table", "adult"], "Connection refused"),
    "wrong password": (
        lambda s: [s.url(password="wrong-" + s.password), "--table", "adult"],
        "password authentication",
    ),
    "no such database": (lambda s: [s.url(database="census"), "--table", "adult"], 'database "census" does not exist'),
    "no such table": (lambda s: [s.url(), "--table", "adults"], "Table adults does not exist"),
    "no such schema": (lambda s: [s.url(), "--table", "private.adult"], 'relation "private.adult" does not exist'),
    "syntax error": (lambda s: [s.url(), "--sql", "SELEC * FROM adult"], "not valid SQL"),
    "two statements": (lambda s: [s.url(), "--sql", "SELECT * FROM adult; DROP TABLE adult"], "not valid SQL"),
    "not a select": (lambda s: [s.url(), "--sql", "DELETE FROM adult"], "not valid SQL"),
    "insert in a function": (
        lambda s: [s.url(), "--sql", "SELECT a.*, log_read() FROM adult a"],
        "cannot execute INSERT in a read-only transaction",
    ),
    "nextval": (
        lambda s: [s.url(), "--sql", "SELECT a.*, nextval('counter') FROM adult a"],
        "cannot execute nextval() in a read-only transaction",
    ),
    "delete in a WITH": (
        lambda s: [s.url(), "--sql", "WITH gone AS (DELETE FROM adult RETURNING *) SELECT * FROM gone"],
        "tries to change the database",
    ),
    "unknown column": (lambda s: [s.url(), "--table", "adult", "--qi", "sex,agee"], "did you mean 'age'"),
    "neither table nor query": (lambda s: [s.url()], "--table NAME or --sql"),
    "both table and query": (lambda s: [s.url(), "--table", "adult", "--sql", "SELECT 1"], "(one of them)"),
    "sheet of a database": (lambda s: [s.url(), "--table", "adult", "--sheet", "1"], "--sheet"),
    "file engine on a database": (lambda s: [s.url(), "--table", "adult", "--engine", "duckdb"], "postgresql engine"),
    "bad URL parameter": (lambda s: [s.url() + "?colour=blue", "--table", "adult"], "invalid URI query parameter"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_sources_exit_2_with_a_message_and_write_nothing(traps: PostgresServer, capsys: Any, name: str) -> None:
    arguments, expected = BAD[name]
    before = _fingerprint(traps)
    args = arguments(traps)
    if "--qi" not in args:
        args += ["--qi", "sex,age"]
    code, out, err = run(capsys, "diagnose", *args)
    assert code == 2 and out == ""
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    assert traps.password not in err and "wrong-" not in err
    assert "***" in err or "://" not in err
    assert _fingerprint(traps) == before


def test_table_and_query_need_a_database(capsys: Any, postgres_datasets: Datasets) -> None:
    code, _, err = run(capsys, "diagnose", str(postgres_datasets.paths["adult"]), "--table", "adult", "--qi", "sex")
    assert code == 2 and "--table and --sql name the records of a postgresql:// source" in err


def test_a_server_that_never_answers_times_out(postgres_datasets: Datasets, capsys: Any) -> None:
    with socket.socket() as silent:  # accepts connections and says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = postgres_datasets.server.url(port=silent.getsockname()[1]) + "?connect_timeout=1"
        started = time.perf_counter()
        code, _, err = run(capsys, "diagnose", url, "--table", "adult", "--qi", "sex")
    assert code == 2 and "timeout expired" in err and time.perf_counter() - started < 8
    assert postgres_datasets.server.password not in err


def test_without_psycopg_the_message_names_the_extra(
    postgres_datasets: Datasets, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "psycopg" or m.startswith("psycopg.")]:
        monkeypatch.setitem(sys.modules, name, None)  # what an environment without the package gives: ImportError
    code, _, err = run(capsys, "diagnose", postgres_datasets.server.url(), "--table", "adult", "--qi", "sex")
    assert code == 2 and "pip install 'privdash[postgres]'" in err


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ana:s3cret@db.example:5432/census", "postgresql://ana:***@db.example:5432/census"),
        ("postgresql://ana:p@ss/w0rd@db/census", "postgresql://ana:***@db/census"),
        (
            "postgres://db/census?user=ana&password=s3cret&sslmode=require",
            "postgres://db/census?user=ana&password=***&sslmode=require",
        ),
        ("postgresql://ana@db/census", "postgresql://ana@db/census"),
        ("host=db password='s3 cret' user=ana", "host=db password=*** user=ana"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_preview_is_the_first_rows_typed_like_the_reader(postgres_datasets: Datasets) -> None:
    url = postgres_datasets.server.url()
    for case in ("adult", "testdata"):
        first = sample_rows(DatabaseSource(url, table=case), 7)
        pd.testing.assert_frame_equal(first, postgres_datasets.frames[case].head(7))
    assert sample_rows(DatabaseSource(url, sql="SELECT age FROM adult WHERE false"), 3).shape == (0, 1)


@pytest.mark.parametrize("weights", ["sampling_weight", None])
def test_household_risk_in_postgresql_equals_pandas(postgres_datasets: Datasets, weights: str | None) -> None:
    """The GROUP BY with the household column gives pandas' household risk to the last digit."""
    _, qis, sensitive, _ = CASES["testdata"]
    options = {"sensitive": sensitive, "weights": weights, "household": "ori_hid"}
    memory = diagnose(read_table(postgres_datasets.paths["testdata"]), qis, **options, engine="pandas")
    database = diagnose(DatabaseSource(postgres_datasets.server.url(), table="testdata"), qis, **options)
    assert database.engine == "postgresql"
    assert memory.household_risk is not None and database.household_risk is not None
    assert same(_comparable(memory), _comparable(database)) == []
    assert database.household_risk.household_risk.tolist() == memory.household_risk.household_risk.tolist()
