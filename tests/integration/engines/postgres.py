"""A real PostgreSQL server for the tests (and ``bench/bench_postgresql.py``): ``initdb`` into a temporary folder,
``pg_ctl`` on a free port of 127.0.0.1, the public datasets loaded into typed tables.

The server binaries are found under ``/usr/lib/postgresql/<version>/bin`` (the newest), else through ``pg_config``
or ``PATH``; without them the tests fail with the package to install. ``initdb`` and ``postgres`` refuse to run as
root, so under root the folder is handed to the ``postgres`` system user and the server runs as that user.

The server listens on 127.0.0.1 only (its Unix socket is in the temporary folder); host connections need the
role's password (SCRAM), so wrong-password tests meet real authentication. It is stopped (``pg_ctl stop -m fast``)
and its folder removed when the ``with`` block ends, whatever happened inside.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

#: The superuser the tests connect as, with a random password per server.
USER = "privdash"
DATABASE = "postgres"
#: Settings for a throw-away server: nothing needs to survive a crash.
FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


class ServerUnavailable(RuntimeError):
    """The PostgreSQL binaries are missing, or the server could not be started."""


@dataclass(frozen=True)
class PostgresServer:
    """A running server: where it listens and who may connect."""

    port: int
    password: str = field(repr=False)  # kept out of test reports
    folder: Path
    user: str = USER
    database: str = DATABASE

    def url(self, *, password: str | None = None, database: str | None = None, port: int | None = None) -> str:
        """``postgresql://user:password@127.0.0.1:port/database``; each part can be replaced (for bad inputs)."""
        return (
            f"postgresql://{self.user}:{self.password if password is None else password}@127.0.0.1:"
            f"{self.port if port is None else port}/{self.database if database is None else database}"
        )

    def connect(self, *, autocommit: bool = True) -> Any:
        import psycopg

        return psycopg.connect(self.url(), autocommit=autocommit, connect_timeout=10)


def find_binaries() -> Path:
    """The folder of ``initdb``, ``pg_ctl`` and ``postgres`` (the newest installed version)."""

    def version(folder: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", Path(folder).parent.name))

    folders = [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)]
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=10)
            folders.append(Path(found.stdout.strip()))
    initdb = shutil.which("initdb")
    if initdb:
        folders.append(Path(initdb).parent)
    for folder in folders:
        if all((folder / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    raise ServerUnavailable(
        "The PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found: install the 'postgresql' "
        "package (apt-get install postgresql)."
    )


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class _Account:
    """Who runs the server: this process, or the ``postgres`` user when this process is root."""

    uid: int | None
    gid: int | None

    @classmethod
    def choose(cls) -> _Account:
        if os.geteuid() != 0:
            return cls(None, None)
        try:
            entry = pwd.getpwnam("postgres")
        except KeyError:
            raise ServerUnavailable(
                "PostgreSQL refuses to run as root and there is no 'postgres' user to run it as: create one "
                "(useradd --system postgres) or run the tests as another user."
            ) from None
        return cls(entry.pw_uid, entry.pw_gid)

    def own(self, path: Path) -> None:
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)

    def run(self, command: list[str], folder: Path, timeout: float) -> subprocess.CompletedProcess[str]:
        # Popen(user=..., group=..., extra_groups=[]) drops root like setpriv does, without a shell in between.
        extra: dict[str, Any] = {}
        if self.uid is not None:
            extra = {"user": self.uid, "group": self.gid, "extra_groups": []}
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(folder)}
        return subprocess.run(
            command, cwd=folder, env=environment, capture_output=True, text=True, timeout=timeout, check=False, **extra
        )


@contextlib.contextmanager
def running_postgres(settings: Mapping[str, str] | None = None) -> Iterator[PostgresServer]:
    """A fresh server on a free port of 127.0.0.1, stopped and deleted when the block ends."""
    binaries = find_binaries()
    account = _Account.choose()
    folder = Path(tempfile.mkdtemp(prefix="privdash-pg-"))
    data = folder / "data"
    try:
        account.own(folder)
        password = secrets.token_urlsafe(18)
        password_file = folder / "password"
        password_file.write_text(password + "\n", encoding="utf-8")
        password_file.chmod(0o600)
        account.own(password_file)
        created = account.run(
            [
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                USER,
                f"--pwfile={password_file}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
            folder,
            timeout=120,
        )
        password_file.unlink()
        if created.returncode != 0:
            raise ServerUnavailable(f"initdb failed:\n{created.stdout}\n{created.stderr}")
        options = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(folder),
            "max_connections": "20",
            **FAST,
            **(settings or {}),
        }
        pg_ctl, log = [str(binaries / "pg_ctl"), "-D", str(data)], folder / "server.log"
        for attempt in range(3):  # another program may take the free port before the server does
            port = free_port()
            flags = " ".join(f"-c {name}={value}" for name, value in {**options, "port": str(port)}.items())
            result = account.run([*pg_ctl, "-l", str(log), "-w", "-t", "60", "-o", flags, "start"], folder, timeout=90)
            if result.returncode == 0:
                break
            if attempt == 2:
                text = log.read_text(errors="replace") if log.exists() else ""
                raise ServerUnavailable(f"pg_ctl start failed:\n{result.stdout}\n{result.stderr}\n{text[-3000:]}")
        yield PostgresServer(port=port, password=password, folder=folder)
    finally:
        _stop(account, binaries, data, folder)
        shutil.rmtree(folder, ignore_errors=True)


def _stop(account: _Account, binaries: Path, data: Path, folder: Path) -> None:
    """``pg_ctl stop -m fast``; should it fail, the server's own process (from its pid file) is told to quit."""
    pid_file = data / "postmaster.pid"
    if not pid_file.exists():
        return
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        account.run([str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], folder, timeout=90)
    if pid_file.exists():
        with contextlib.suppress(OSError, ValueError, IndexError):
            os.kill(int(pid_file.read_text().splitlines()[0]), signal.SIGQUIT)  # immediate shutdown
            time.sleep(2)


# --------------------------------------------------------------------------------------------------------- loading


def sql_type(dtype: Any) -> str:
    """The column type holding a column of ``read_table``'s frame without loss."""
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype):
        return "bigint"
    if pd.api.types.is_float_dtype(dtype):
        return "double precision"
    return "text"


def load_frame(connection: Any, table: str, frame: pd.DataFrame) -> None:
    """``CREATE TABLE table`` typed after ``frame``'s columns, filled with ``COPY ... FROM STDIN`` (CSV)."""
    from psycopg import sql

    columns = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(str(name)), sql.SQL(sql_type(dtype)))
        for name, dtype in frame.dtypes.items()
    )
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), columns))
        # Missing values become unquoted empty fields, COPY's NULL in CSV (read_table never gives an empty text, so
        # none is lost); pandas writes floats with repr, which reads back as the same double.
        text = frame.to_csv(index=False, header=False, na_rep="", lineterminator="\n")
        with cursor.copy(sql.SQL("COPY {} FROM STDIN (FORMAT csv)").format(sql.Identifier(table))) as copy:
            copy.write(text.encode("utf-8"))
        cursor.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))


# -------------------------------------------------------------------------------------------------------- fixture


@dataclass(frozen=True)
class Datasets:
    """A running server holding one table per dataset, and each dataset as ``read_table`` gives it."""

    server: PostgresServer
    frames: Mapping[str, pd.DataFrame]
    paths: Mapping[str, Path]


@pytest.fixture(scope="module")
def postgres_datasets(data_dir: Path) -> Iterator[Datasets]:
    """The four datasets of the engine comparisons (``CASES``), each in a table named after its case."""
    from privdash.data.tables import read_table
    from tests.unit.core.engines.test_aggregate import CASES

    try:
        with running_postgres() as server:
            frames, paths = {}, {}
            with server.connect() as connection:
                for case, (relative, *_) in CASES.items():
                    paths[case] = data_dir / relative
                    frames[case] = read_table(paths[case])
                    load_frame(connection, case, frames[case])
            yield Datasets(server, frames, paths)
    except ServerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
