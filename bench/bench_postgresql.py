"""A table in PostgreSQL diagnosed in place: privdash's postgresql engine against the bare GROUP BY, same server.

Starts a throw-away server (as the tests do: ``initdb`` + ``pg_ctl`` on 127.0.0.1, see
``tests/integration/engines/postgres.py``), generates a table of ``--rows`` rows x 8 quasi-identifiers (text and
integers, ``--levels`` values each) + 1 sensitive attribute (20 values) inside the database, then times, best of
``--repeat``:

* the bare ``SELECT qis..., sa, COUNT(*) FROM t GROUP BY qis..., sa``, fetched through psycopg (and through psql
  into /dev/null, for reference);
* privdash's aggregate alone (``aggregate_table``: the same GROUP BY sent through COPY, and its typing), and the
  whole ``diagnose(DatabaseSource(url, table=...), qis, sensitive=[sa])`` (also the classes, every privacy model and
  the three attacker risks). Target: at most 1.3x the bare query through psycopg.

The bytes that cross the wire during privdash's diagnosis are counted by a loopback TCP forwarder between the
client and the server, and compared with the table's size on disk. Run: ``python -m bench.bench_postgresql``
(default 10,000,000 rows; ``--rows`` for fewer). Needs the PostgreSQL server binaries and the test extra.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

from bench._common import best_time, machine, peak_memory, ratio
from privdash.engines.aggregate import DatabaseSource, aggregate_table
from privdash.measure.diagnose import diagnose
from tests.integration.engines.postgres import PostgresServer, find_binaries, running_postgres

QIS = [f"q{i}" for i in range(8)]
SA = "s"
TABLE = "microdata"
#: A server sized for analytics on this machine: the table fits in shared buffers, the hash aggregate in work_mem.
SETTINGS = {"shared_buffers": "2GB", "work_mem": "256MB", "max_parallel_workers_per_gather": "2"}


def create_table(server: PostgresServer, rows: int, levels: tuple[int, ...]) -> float:
    """Generate the table in the database (seeded ``random()``); returns the seconds it took."""
    columns = [
        f"'v' || floor(random() * {count})::int AS q{i}" if i % 2 == 0 else f"floor(random() * {count})::bigint AS q{i}"
        for i, count in enumerate(levels)
    ]
    started = time.perf_counter()
    with server.connect() as connection:
        connection.execute("SELECT setseed(0.7)")
        connection.execute(
            f"CREATE TABLE {TABLE} AS SELECT {', '.join(columns)}, 's' || floor(random() * 20)::int AS {SA} "
            f"FROM generate_series(1, {rows})"
        )
        connection.execute(f"VACUUM (ANALYZE, FREEZE) {TABLE}")  # hint bits set: the timed scans only read
    return time.perf_counter() - started


def bare_query() -> str:
    columns = ", ".join([*QIS, SA])
    return f"SELECT {columns}, COUNT(*) FROM {TABLE} GROUP BY {columns}"


def bare_psycopg(server: PostgresServer) -> list[tuple[Any, ...]]:
    with server.connect() as connection:
        return connection.execute(bare_query()).fetchall()


def bare_psql(server: PostgresServer) -> None:
    psql = find_binaries() / "psql"
    subprocess.run(
        [str(psql), server.url(), "-X", "-q", "-A", "-t", "-o", "/dev/null", "-c", bare_query()],
        check=True,
        capture_output=True,
    )


class Forwarder:
    """A loopback TCP forwarder to ``port`` that counts the bytes in each direction."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.to_client = 0
        self.to_server = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pump, args=(client, upstream, "to_server"), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, "to_client"), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, direction: str) -> None:
        with source, sink:
            while True:
                try:
                    block = source.recv(1 << 16)
                except OSError:
                    return
                if not block:
                    with contextlib.suppress(OSError):
                        sink.shutdown(socket.SHUT_WR)
                    return
                with self._lock:
                    setattr(self, direction, getattr(self, direction) + len(block))
                sink.sendall(block)

    def close(self) -> None:
        self._listener.close()


@contextlib.contextmanager
def counting(server: PostgresServer) -> Iterator[Forwarder]:
    forwarder = Forwarder(server.port)
    try:
        yield forwarder
    finally:
        forwarder.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the best is kept")
    parser.add_argument(
        "--levels",
        default="3,3,3,3,3,3,3,3",
        help="values of the eight QIs (default 3 each: 6,561 classes, 131,220 class x sensitive value groups)",
    )
    args = parser.parse_args()
    levels = tuple(int(x) for x in args.levels.split(","))
    print(machine())
    with running_postgres(SETTINGS) as server:
        loading = create_table(server, args.rows, levels)
        with server.connect() as connection:
            version = connection.execute("SHOW server_version").fetchone()[0]
            table_bytes = connection.execute(f"SELECT pg_total_relation_size('{TABLE}')").fetchone()[0]
        print(
            f"PostgreSQL {version}, settings {SETTINGS}; table: {args.rows:,} rows, QI levels {args.levels}, "
            f"{table_bytes / 1e6:,.0f} MB on disk, generated in {loading:.1f} s"
        )
        source = DatabaseSource(server.url(), table=TABLE)
        rows = bare_psycopg(server)  # warm-up (the table into shared buffers) and the reference numbers
        result = diagnose(source, QIS, sensitive=[SA])
        distinct = len({row[: len(QIS)] for row in rows})
        assert result.rows == args.rows and result.classes.n_classes == distinct, "privdash disagrees with SQL"

        timings = {
            "bare GROUP BY, psql to /dev/null": best_time(lambda: bare_psql(server), repeat=args.repeat),
            "bare GROUP BY, psycopg fetchall": best_time(lambda: bare_psycopg(server), repeat=args.repeat),
            "privdash aggregate (GROUP BY, transfer, typing)": best_time(
                lambda: aggregate_table(source, [*QIS, SA]), repeat=args.repeat
            ),
            "privdash diagnose (postgresql engine)": best_time(
                lambda: diagnose(source, QIS, sensitive=[SA]), repeat=args.repeat
            ),
        }
        baseline = timings["bare GROUP BY, psycopg fetchall"]
        print(f"\n{len(rows):,} groups (class x sensitive value), {distinct:,} classes, k = {result.k}")
        print("| run | time | vs bare (psycopg) |")
        print("|---|---|---|")
        for name, seconds in timings.items():
            print(f"| {name} | {seconds:.2f} s | {ratio(seconds, baseline)} |")

        with counting(server) as forwarder:
            through = DatabaseSource(server.url(port=forwarder.port), table=TABLE)
            peak = peak_memory(lambda: diagnose(through, QIS, sensitive=[SA]))
        wire = forwarder.to_client + forwarder.to_server
        print(
            f"\nwire: {forwarder.to_client / 1e6:,.2f} MB server -> client, {forwarder.to_server / 1e3:,.1f} kB "
            f"client -> server; {100 * wire / table_bytes:.3f}% of the table's {table_bytes / 1e6:,.0f} MB "
            f"({table_bytes / wire:,.0f}x less); client peak memory {peak.total / 1e6:,.0f} MB"
        )


if __name__ == "__main__":
    main()
