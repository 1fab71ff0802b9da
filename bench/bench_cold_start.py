"""The first run of a command: what a fresh environment adds to ``privdash release``, ``diagnose`` and ``report``.

Issue "Fast on the files people really have": the first ``privdash release`` in a fresh environment took 22.6 s
(later 2.2-6.2 s). Each command runs as a whole process in four states, in turn:

* ``warm``: files in the page cache, bytecode written, font caches built (a second run);
* ``cold files``: the page cache of the interpreter's standard library, the virtual environment's packages and the
  project's code dropped first (``posix_fadvise(DONTNEED)`` on each file: no root needed, the rest of the machine's
  cache is left alone), as after a reboot or in a new container;
* ``no bytecode``: ``PYTHONPYCACHEPREFIX`` set to an empty folder, so every module (standard library, packages,
  privdash) is compiled from source, as on the first run of an environment installed without bytecode (``uv pip
  install`` without ``--compile-bytecode``, ``pip install --no-compile``) or one whose folders the user cannot write;
* ``fresh font caches``: ``MPLCONFIGDIR`` and ``XDG_CACHE_HOME`` (fontconfig's user cache) set to empty folders.

CPU time (user + system of the finished child) and wall time; the machine is shared, so quote CPU times. ``--source
DIR`` runs the code in DIR (a checkout of another commit's ``privdash`` folder) for a before/after comparison.

Usage: ``python -m bench.bench_cold_start [--runs N] [--source DIR]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from bench._common import ROOT, data_path, machine


def evict(folders: list[Path]) -> None:
    """Drop the page cache of every file under ``folders`` (pages mapped by a running process stay)."""
    for folder in folders:
        for parent, _dirs, files in os.walk(folder):
            for name in files:
                try:
                    descriptor = os.open(os.path.join(parent, name), os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(descriptor)


def commands(folder: Path) -> dict[str, list[str]]:
    adult = data_path("arx_adult")
    qis = "sex,age,race,marital-status,education,native-country,workclass,salary-class"
    return {
        "release": [
            "release",
            str(adult / "adult.csv"),
            "--query",
            "histogram",
            "--column",
            "sex",
            "--domain",
            "Male,Female",
            "--epsilon",
            "1",
            "--ledger",
            str(folder / "ledger.json"),
            "--dataset-identity",
            "adult",
            "--budget",
            "100",
        ],
        "diagnose": ["diagnose", str(adult / "adult.csv"), "--qi", qis, "--json"],
        "report (HTML)": ["report", str(adult / "adult.csv"), "--qi", qis, "--k", "5", "-o", str(folder / "r.html")],
    }


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            out.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed:\n{out.read().decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--source", type=Path, default=ROOT, help="folder holding the privdash package to run")
    options = parser.parse_args()
    source = options.source.resolve()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    packages = Path(sysconfig.get_paths()["purelib"])
    print(f"machine: {machine()}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; code: {source}")
    print()
    print("| command | state | CPU (median) | wall (median) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name, args in commands(folder).items():
            argv = [sys.executable, "-c", "import sys; from privdash.cli import main; sys.exit(main())", *args]
            run(argv, source, os.environ.copy())  # warm-up: bytecode written, caches built
            figures: dict[str, list[tuple[float, float]]] = {}
            for _ in range(options.runs):
                for state in ("warm", "cold files", "no bytecode", "fresh font caches"):
                    env = os.environ.copy()
                    if state == "cold files":
                        evict([stdlib, packages, source / "privdash"])
                    elif state == "no bytecode":
                        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(dir=folder)
                    elif state == "fresh font caches":
                        env["MPLCONFIGDIR"] = tempfile.mkdtemp(dir=folder)
                        env["XDG_CACHE_HOME"] = tempfile.mkdtemp(dir=folder)
                    figures.setdefault(state, []).append(run(argv, source, env))
            for state, rows in figures.items():
                cpu = statistics.median(r[0] for r in rows)
                wall = statistics.median(r[1] for r in rows)
                print(f"| `privdash {name}` | {state} | {cpu:.2f} s | {wall:.2f} s |", flush=True)
    print()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
