"""Every file of the bad-file corpus (tests/badfiles.py) through ``privdash diagnose``: a one-line error and exit 2,
or exit 0 with the right numbers; never a traceback, never more than 30 s, never a modified input file.

The command line reads with the default limits, so the cases that state other limits (the same files, read with
small limits) run through the Python API in tests/unit/core/data/test_tables.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from privdash.cli import main
from tests.badfiles import Case, write_corpus

#: Longest a single file may take through the command line.
MAX_SECONDS = 30.0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    return {case.name: case for case in write_corpus(tmp_path_factory.mktemp("badfiles"))}


def fingerprint(path: Path) -> tuple[str, int, int] | None:
    """Content hash, modification time and mode of a file (None for a folder or a missing path)."""
    if not path.is_file():
        return None
    stat = path.stat()
    mode = stat.st_mode
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except PermissionError:  # the unreadable file, when not root: its metadata must not change either
        digest = "unreadable"
    return digest, stat.st_mtime_ns, mode


def arguments(case: Case) -> list[str]:
    sheet = ["--sheet", str(case.sheet)] if case.sheet is not None else []
    engine = ["--engine", case.engine] if case.engine is not None else []
    return ["diagnose", str(case.path), "--qi", case.quasi_identifier, *sheet, *engine, "--json"]


def problems(case: Case, code: int, out: str, err: str) -> list[str]:
    """What is wrong with one run of the command line on ``case`` (empty when it behaved)."""
    found = []
    if "Traceback" in err or "Traceback" in out:
        found.append("a traceback")
    if case.error is not None:
        if code != 2:
            found.append(f"exit {code} instead of 2")
        lines = [line for line in err.splitlines() if line.startswith("privdash diagnose: error: ")]
        if len(lines) != 1:
            found.append(f"{len(lines)} error lines instead of one")
        elif not re.search(case.error, lines[0]):
            found.append(f"the message does not match {case.error!r}")
        return found
    if code != 0:
        return [*found, f"exit {code} instead of 0"]
    payload = json.loads(out)
    expected = {"rows": case.shape[0] if case.shape else None, "k": case.k, "classes": case.classes}
    got = {name: payload[name] for name in expected}
    if got != expected:
        found.append(f"numbers {got} instead of {expected}")
    if case.note is not None and not re.search(case.note, err):
        found.append(f"no note matching {case.note!r} on stderr")
    if case.warning is not None:
        if not any(re.search(case.warning, warning) for warning in payload["warnings"]):
            found.append(f"no warning matching {case.warning!r} in the JSON")
        if not re.search("privdash diagnose: warning: " + case.warning, err):
            found.append("the warning is not on stderr")
    elif payload["warnings"]:
        found.append(f"unexpected warnings {payload['warnings']}")
    return found


def test_the_corpus_has_at_least_40_files_each_run_through_the_command_line(corpus: dict[str, Case]) -> None:
    files = {case.path for case in corpus.values()}
    assert len(files) >= 40
    # Limited cases re-read a file that also has a case under the command line's default limits.
    assert files == {case.path for case in corpus.values() if case.limits is None}
    assert sum(case.reads for case in corpus.values()) >= 20
    assert sum(not case.reads for case in corpus.values()) >= 30


def test_every_bad_file_through_privdash_diagnose(corpus: dict[str, Case], capsys: pytest.CaptureFixture[str]) -> None:
    failures = []
    timings = {}
    for case in corpus.values():
        if case.limits is not None:
            continue
        before = fingerprint(case.path)
        started = time.perf_counter()
        code = main(arguments(case))
        timings[case.name] = time.perf_counter() - started
        captured = capsys.readouterr()
        found = problems(case, code, captured.out, captured.err)
        if timings[case.name] > MAX_SECONDS:
            found.append(f"took {timings[case.name]:.1f} s")
        if fingerprint(case.path) != before:
            found.append("the input file changed")
        if found:
            failures.append(f"{case.name} ({case.description}): {'; '.join(found)}\n    stderr: {captured.err[:400]}")
    assert not failures, "\n".join(failures)
    assert max(timings.values()) < MAX_SECONDS


#: A few cases through a real process: exit status, no traceback, bounded time.
SUBPROCESS_CASES = (
    "nul_after_1mb",
    "integers_30_digits",
    "excel_formulas_without_values",
    "excel_zip_bomb",
    "excel_rows_bomb",
    "parquet_nested",
    "excel_several_sheets",
)


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_bad_files_in_a_real_process(corpus: dict[str, Case], name: str) -> None:
    case = corpus[name]
    before = fingerprint(case.path)
    started = time.perf_counter()
    process = subprocess.run(
        [sys.executable, "-c", "import sys; from privdash.cli import main; sys.exit(main())", *arguments(case)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.perf_counter() - started
    assert elapsed < MAX_SECONDS + 10  # the interpreter's start-up on top of the case's own bound
    assert "Traceback" not in process.stderr
    assert problems(case, process.returncode, process.stdout, process.stderr) == [], process.stderr
    assert fingerprint(case.path) == before


def test_sheet_option_of_diagnose_and_anonymize(
    corpus: dict[str, Case], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    workbook = corpus["excel_several_sheets"].path
    code = main(["diagnose", str(workbook), "--qi", "label", "--sheet", "codes"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "sheets.xlsx: 2 rows" in captured.out and "note:" not in captured.err
    code = main(["diagnose", str(workbook), "--qi", "region"])
    captured = capsys.readouterr()
    assert code == 0 and "privdash diagnose: note: sheets.xlsx has 3 sheets; the first, 'people', was read" in (
        captured.err
    )
    code = main(["diagnose", str(corpus["many_rows"].path), "--qi", "a", "--sheet", "codes"])
    captured = capsys.readouterr()
    assert code == 2 and "is not an Excel workbook, so it has no sheet to choose" in captured.err
    # anonymize reads the chosen sheet too (a hierarchy for 'label' generalizes both values to '*')
    hierarchies = tmp_path / "hierarchies"
    hierarchies.mkdir()
    (hierarchies / "label.csv").write_text("one;*\ntwo;*\n")
    out = tmp_path / "out.csv"
    code = main(
        ["anonymize", str(workbook), "--sheet", "codes", "--qi", "label", "--hierarchies", str(hierarchies),
         "--k", "2", "-o", str(out), "--json"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert out.read_text().splitlines() == ["code,label", "1,*", "2,*"]
    code = main(
        ["anonymize", str(workbook), "--sheet", "peple", "--qi", "label", "--hierarchies", str(hierarchies)]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2 and "Did you mean 'people'?" in captured.err


def test_warnings_in_the_text_output_and_on_stderr(corpus: dict[str, Case], capsys: pytest.CaptureFixture[str]) -> None:
    case = corpus["quasi_identifier_all_missing"]
    code = main(["diagnose", str(case.path), "--qi", "a,b"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    sentence = "Quasi-identifier 'a' is missing in every record: it does not distinguish anyone."
    assert f"warning: {sentence}" in captured.out
    assert f"privdash diagnose: warning: {sentence}" in captured.err
    code = main(["diagnose", str(corpus["many_rows"].path), "--qi", "a"])
    captured = capsys.readouterr()
    assert code == 0 and "warning" not in captured.out + captured.err
