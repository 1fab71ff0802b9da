"""``privdash synthesize --report``: the release report of the table with its Synthetic release section, in HTML and
in PDF (read back with pdftotext), the seed withheld and the attacks' numbers those the command prints as JSON; a
report name that is neither .html nor .pdf is refused before any work (exit 2, nothing written)."""

from __future__ import annotations

import json
import re
import subprocess
from html import unescape
from pathlib import Path

import pytest

from privdash.application.attack import fmt_rate
from privdash.cli import main
from privdash.data.demo import people_table

SEED = 424_242
ARGS = ("--method", "full", "--qi", "age,sex,postcode", "--sensitive", "diagnosis")
COLUMNS = ("--columns", "age,sex,postcode,diagnosis,hair_colour")


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("synthesize") / "people.csv"
    people_table().to_csv(path, index=False)
    return path


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", text)))


def test_the_report_holds_the_synthetic_release(
    people: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html_path, pdf_path = tmp_path / "report.html", tmp_path / "report.pdf"
    common = ["synthesize", str(people), *ARGS, *COLUMNS, "--seed", str(SEED)]
    assert main([*common, "--json", "--report", str(html_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    page = flat(html_path.read_text(encoding="utf-8"))
    assert re.search(r"\d+\. Synthetic release", page)
    assert "A fully synthetic version of people.csv" in page
    assert "k-anonymity does not describe a synthetic table" in page
    linkage = printed["attacks"]["linkage"]
    assert f"The synthetic table Linkage {fmt_rate(linkage['success_rate'])}" in page
    assert str(SEED) not in page and "withheld" in page

    assert main([*common, "--report", str(pdf_path)]) == 0
    text = subprocess.run(["pdftotext", str(pdf_path), "-"], capture_output=True, text=True, check=True).stdout
    read = re.sub(r"\s+", " ", text)
    assert "Synthetic release" in read and "Measured attacks, against the control records" in read
    assert "k-anonymity does not describe a synthetic table" in read
    assert str(SEED) not in read


def test_a_report_name_without_a_known_extension_is_refused(
    people: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "synthetic.csv"
    assert main(["synthesize", str(people), *ARGS, "-o", str(out), "--report", str(tmp_path / "report.docx")]) == 2
    assert "name the output .pdf, .html or .htm" in capsys.readouterr().err
    assert not out.exists()
