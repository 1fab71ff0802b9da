"""The release report of Adult: from the CLI and from the dashboard's Report button, as the user waits for it.

Target (issue "Fast on the files people really have"): the report of Adult (30,162 records, 8 QIs, occupation
sensitive, k = 5, the least-lossy fix with ARX's hierarchies) under 5 s from the Report button to the downloads
(HTML and PDF) and from ``privdash report ... -o report.pdf``.

* ``cli``: ``python -m privdash report adult.csv --qi ... --sensitive occupation --k 5 --fix least-lossy
  --hierarchies ... --max-suppression 0.02 -o report.pdf`` (and ``.html``) as whole processes, in turn; CPU time
  (user + system of the finished child), wall time and peak RSS, medians.
* ``button``: what the Report button's background job does, in a fresh process that has first imported what the
  dashboard's fork server imports before it forks a job (:data:`dashboard.ui.jobs._PRELOAD`; not timed): the
  report of the Adult presentation's view (the Fix page with its least-lossy search, occupation sensitive) built by
  :func:`~privdash.application.report.report_for_state`, both files rendered and kept (the job's body), timed in
  stages. ``fix cached``: the Fix page has shown the search's result, so its run is in the disk cache shared with
  jobs (the usual way to the button); ``fix computed``: the search is run by the job (a share link opened straight
  on the report). The time from the press to the downloads adds the browser's polling (every 400 ms) to the job's.
* ``http``: the button pressed through HTTP against the real app (its background jobs forked from the fork server),
  polling as the browser does, the search already previewed: seconds from the press to the answer with both files.

The machine is shared: quote the CPU times and the medians. ``pdftoppm`` the PDF (``--keep DIR``) to look at it.

Usage: ``python -m bench.bench_report [--runs N] [--only cli|button|http] [--keep DIR] [--before DIR]`` (``--before``: a
folder holding another commit's ``privdash`` and ``dashboard``, e.g. from ``git archive COMMIT privdash dashboard``;
the two run in turn and the median of the pair-by-pair CPU ratios is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import ROOT, data_path, machine

QIS = "sex,age,race,marital-status,education,native-country,workclass,salary-class"


def cli_command(output: Path) -> list[str]:
    adult = data_path("arx_adult")
    return [
        sys.executable,
        "-m",
        "privdash",
        "report",
        str(adult / "adult.csv"),
        "--qi",
        QIS,
        "--sensitive",
        "occupation",
        "--k",
        "5",
        "--fix",
        "least-lossy",
        "--hierarchies",
        str(adult / "hierarchies"),
        "--max-suppression",
        "0.02",
        "-o",
        str(output),
    ]


def run(argv: list[str], cwd: Path | None = None) -> tuple[float, float, float, str]:
    """CPU seconds (user + system of the finished child), wall seconds, peak RSS (MiB) and standard output; ``cwd``:
    the folder whose ``privdash`` (and ``dashboard``) the child imports (the bench package stays this one's)."""
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, text=True, cwd=cwd or ROOT, env=env)
        _pid, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if child.returncode:
            raise SystemExit(f"{' '.join(argv)} failed ({child.returncode}):\n{err.read()}")
        return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, out.read()


def _table(figures: dict[str, list[tuple[float, ...]]], first: str) -> None:
    """Medians of each row's runs (CPU, wall, min wall, peak) and, with a before, the median of the pair-by-pair CPU
    ratios after / before."""
    print(f"| {first} | CPU (median) | wall (median, min) | peak RSS | CPU after / before (median of pairs) |")
    print("|---|---|---|---|---|")
    for name, rows in figures.items():
        cpu = statistics.median(r[0] for r in rows)
        wall = statistics.median(r[1] for r in rows)
        low = min(r[1] for r in rows)
        peak = max(r[2] for r in rows)
        ratio = ""
        if name.startswith("after") and name.replace("after", "before", 1) in figures:
            pairs = zip(figures[name.replace("after", "before", 1)], rows, strict=True)
            ratio = f"**{statistics.median(a[0] / b[0] for b, a in pairs):.2f}x**"
        memory = f"{peak:.0f} MiB" if peak else "-"
        print(f"| {name} | {cpu:.2f} s | {wall:.2f} s ({low:.2f} s) | {memory} | {ratio} |")


def _codes(before: Path | None) -> list[tuple[str, Path]]:
    return [("before", before), ("after", ROOT)] if before is not None else [("after", ROOT)]


def bench_cli(runs: int, folder: Path, before: Path | None) -> None:
    figures: dict[str, list[tuple[float, ...]]] = {}
    for kind in ("pdf", "html"):
        path = folder / f"adult-report.{kind}"
        for _code, cwd in _codes(before):
            run(cli_command(path), cwd)  # warm-up (page cache, bytecode)
        for _ in range(runs):
            for code, cwd in _codes(before):
                cpu, wall, peak, _out = run(cli_command(path), cwd)
                figures.setdefault(f"{code}: `privdash report ... -o report.{kind}`", []).append((cpu, wall, peak))
    _table(figures, "command")


# --- the Report button's job ---------------------------------------------------------------------------------------


def _services(folder: Path) -> Any:
    from privdash.application.services import Services
    from privdash.application.settings import Settings

    return Services(Settings(store_dir=folder / "store", cache_dir=folder / "cache", data_dir=data_path()))


def _state(services: Any) -> Any:
    from privdash.application.presentations import PRESENTATIONS
    from privdash.application.state import ViewState

    item = next(p for p in PRESENTATIONS if p.dataset == "adult")
    state = ViewState(dataset="demo:adult", k=item.k, max_risk=item.max_risk, fix=item.fix)
    return services.initial_state(services.dataset(state.dataset), state)


def job(folder: Path, keep: Path | None) -> None:
    """One Report job in this process (run as a child by :func:`bench_button`); prints its stages as JSON."""
    import importlib

    from dashboard.ui import jobs

    for name in jobs._PRELOAD:
        if name != "__main__":
            importlib.import_module(name)
    from dashboard.ui.report import _stem
    from privdash.application.report import ReportFiles, report_for_state
    from privdash.application.report.render import render

    services = _services(folder)
    state = _state(services)
    stages: dict[str, float] = {}
    clock = time.process_time()
    wall = time.perf_counter()
    report = report_for_state(services, state)
    stages["build"] = time.process_time() - clock
    # render_files(report, stem), in its order, with the time the HTML file is ready (the charts are drawn then)
    html = render(report, "html")
    stages["to html"] = time.process_time() - clock
    stem = _stem(report.title)
    files = {"html": (f"{stem}-report.html", html), "pdf": (f"{stem}-report.pdf", render(report, "pdf"))}
    stages["render"] = time.process_time() - clock - stages["build"]
    ReportFiles(folder / "cache" / "reports", ttl=600).put(files)
    stages["cpu"] = time.process_time() - clock
    stages["wall"] = time.perf_counter() - wall
    if keep is not None:
        for name, content in files.values():
            (keep / name).write_bytes(content)
    print(json.dumps(stages))


def warm_fix(folder: Path) -> None:
    """The Fix page's background preview: the search's run written to the disk cache that jobs read."""
    from privdash.application.fixruns import FixRuns

    services = _services(folder)
    FixRuns(services).run(_state(services))


def bench_button(runs: int, keep: Path | None, before: Path | None) -> None:
    me = [sys.executable, "-m", "bench.bench_report"]
    figures: dict[str, list[tuple[float, ...]]] = {}
    stages: dict[str, list[dict[str, float]]] = {}
    for label, cached in (("fix cached", True), ("fix computed", False)):
        for i in range(runs + 1):
            for code, cwd in _codes(before):
                folder = Path(tempfile.mkdtemp(prefix="bench-report-"))
                try:
                    if cached:
                        run([*me, "--warm-fix", str(folder)], cwd)
                    args = [*me, "--job", str(folder)]
                    if keep is not None and i == runs and code == "after":
                        args += ["--keep", str(keep)]
                    timed = json.loads(run(args, cwd)[3])
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                if i:  # the first run warms the page cache
                    name = f"{code}: job, {label}"
                    figures.setdefault(name, []).append((timed["cpu"], timed["wall"], 0.0))
                    stages.setdefault(name, []).append(timed)
    _table(figures, "Report button")
    print()
    print("| Report button | build (CPU, median) | HTML file ready (CPU from the start) | render HTML + PDF (CPU) |")
    print("|---|---|---|---|")
    for name, rows in stages.items():
        build = statistics.median(r["build"] for r in rows)
        html = statistics.median(r["to html"] for r in rows)
        render = statistics.median(r["render"] for r in rows)
        print(f"| {name} | {build:.2f} s | {html:.2f} s | {render:.2f} s |")


def http(presses: int) -> None:
    """The Report button pressed through HTTP against the real app (werkzeug, threaded, its background jobs forked
    from the fork server as in production), as the browser does it: the Fix page's view of the Adult presentation,
    its search already previewed (in the disk cache); the time from the press to the job's answer, polling every
    400 ms, and the PDF's download. Prints the seconds as JSON (the first press, while the fork server starts, left
    out)."""
    import threading

    from werkzeug.serving import make_server

    from dashboard.app import create_app
    from privdash.application.fixruns import FixRuns
    from tests.integration.dash_http import DashSession, find, payload

    folder = Path(tempfile.mkdtemp(prefix="bench-report-http-"))
    services = _services(folder)
    app = create_app(services.settings)
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    state = _state(services)
    FixRuns(services).run(state)  # the Fix page's preview of the search
    href = state.href("/fix")
    path, search = href.split("?", 1)
    times = []
    for press in range(presses + 1):
        session = DashSession(base, timeout=300)
        session.open(href)
        page = session.call(
            payload(
                [("_pages_content", "children"), ("_pages_store", "data")],
                [("_pages_location", "pathname", path), ("_pages_location", "search", "?" + search)],
            )
        ).json()["response"]["_pages_content"]["children"]
        stored = find(page, "page-state")
        assert stored is not None
        body = payload(
            ("report-result", "children"),
            [("report-make", "n_clicks", 1)],
            [("page-state", "data", stored["props"]["data"])],
        )
        body["state"].append([])
        body["state"].append({"id": "signoff-fields", "property": "data", "value": None})
        started = time.perf_counter()
        job = session.start(body)
        while not job.poll().done:
            time.sleep(0.4)
        answered = time.perf_counter() - started
        assert job.response is not None and "report-verdict" in json.dumps(job.response), job.response
        if press:
            times.append(answered)
    server.shutdown()
    shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(times))


def bench_http(presses: int, before: Path | None) -> None:
    print("| Report button, through HTTP (press to answer, polling every 400 ms) | median | min | presses |")
    print("|---|---|---|---|")
    for code, cwd in _codes(before):
        times = json.loads(run([sys.executable, "-m", "bench.bench_report", "--http", str(presses)], cwd)[3])
        print(f"| {code} | {statistics.median(times):.2f} s | {min(times):.2f} s | {len(times)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=["cli", "button", "http"])
    parser.add_argument("--keep", type=Path, help="folder to keep the reports in (to look at them)")
    parser.add_argument(
        "--before", type=Path, help="a folder with another commit's privdash and dashboard, run in turn with this one"
    )
    parser.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--http", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--warm-fix", dest="warm_fix", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.job is not None:
        job(options.job, options.keep)
        return
    if options.http is not None:
        http(options.http)
        return
    if options.warm_fix is not None:
        warm_fix(options.warm_fix)
        return
    print(f"machine: {machine()}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    if options.only in (None, "cli"):
        with tempfile.TemporaryDirectory() as folder:
            bench_cli(options.runs, Path(options.keep or folder), options.before)
        print()
    if options.only in (None, "button"):
        bench_button(options.runs, options.keep, options.before)
        print()
    if options.only in (None, "http"):
        bench_http(options.runs, options.before)
    print()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
