"""``privdash report`` on Adult (8 quasi-identifiers, occupation sensitive, k = 5) after the least-lossy fix with
ARX's hierarchies: the PDF read back with pdftotext holds the numbers of the core's diagnosis computed here, and no
quasi-identifier value of a class smaller than k; the HTML file refers to no external resource.

With ``PRIVDASH_WRITE_SCREENSHOTS=1`` the test also writes the README's picture of the first page
(``docs/screenshots/report.png``, by pdftoppm) and the report itself (``docs/report-adult.pdf``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.report import report_for_state
from privdash.application.report.render import render_html
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.cli import main
from privdash.data.tables import read_table
from privdash.dp.ledger import TableFingerprint
from privdash.measure.diagnose import diagnose
from privdash.search.lattice import optimal_generalization
from privdash.transform.hierarchy import load_hierarchies

ROOT = Path(__file__).resolve().parents[3]
QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
K = 5
#: Resources a page would fetch: src/href attributes, CSS url() and @import, with an http(s) address.
EXTERNAL = re.compile(
    r"""(?:\b(?:src|href|xlink:href|action|poster)\s*=\s*["']?\s*https?:|url\(\s*["']?\s*https?:|@import)""", re.I
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def adult_paths(data_dir: Path) -> tuple[Path, Path]:
    return data_dir / "arx_adult" / "adult.csv", data_dir / "arx_adult" / "hierarchies"


@pytest.fixture(scope="module")
def adult(adult_paths: tuple[Path, Path]) -> pd.DataFrame:
    return read_table(adult_paths[0])


def pdf_text(path: Path) -> str:
    done = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True)
    return done.stdout


def small_class_values(data: pd.DataFrame, released: pd.DataFrame | None) -> set[str]:
    """Text values (4 characters or more, not numbers) that occur only in classes of fewer than K records of
    ``data`` and in no class of at least K records of the released table (``released``, else ``data``): the
    release may show a value its own large classes have, so such values, and words of them ("South" of "South
    America"), are left out."""
    shown = data if released is None else released
    sizes = data.groupby(QIS, dropna=False)[QIS[0]].transform("size").to_numpy()
    shown_sizes = shown.groupby(QIS, dropna=False)[QIS[0]].transform("size").to_numpy()
    allowed = {str(v) for name in QIS for v in shown[name][shown_sizes >= K].unique()}
    values: set[str] = set()
    for name in QIS:
        column = data[name].astype(str)
        only_small = set(column[sizes < K]) - set(column[sizes >= K]) - allowed
        values |= {v for v in only_small if len(v) >= 4 and not re.fullmatch(r"[\d.,-]+", v)}
    return {v for v in values if not any(contains_token(a, v) for a in allowed)}


def contains_token(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text) is not None


def test_pdf_of_adult_after_the_least_lossy_fix(
    capsys: pytest.CaptureFixture[str], adult_paths: tuple[Path, Path], adult: pd.DataFrame, tmp_path: Path
) -> None:
    source, hierarchies = adult_paths
    pdf, recipe = tmp_path / "report.pdf", tmp_path / "recipe.json"
    code, out, err = run(
        capsys,
        "report", str(source), "--qi", ",".join(QIS), "--sensitive", "occupation", "--k", str(K),
        "--fix", "least-lossy", "--hierarchies", str(hierarchies), "--max-suppression", "0.02",
        "--save-recipe", str(recipe), "-o", str(pdf),
    )  # fmt: skip
    assert code == 0, err
    assert pdf.read_bytes().startswith(b"%PDF") and "Wrote the PDF report" in out
    text = pdf_text(pdf)
    flat = re.sub(r"\s+", " ", text)

    # The numbers, computed here with the core: the input, the least-lossy fix, the released table.
    before = diagnose(adult, QIS, sensitive=["occupation"])
    search = optimal_generalization(adult, load_hierarchies(hierarchies, QIS), k=K, max_suppression=0.02)
    after = diagnose(search.data, QIS, sensitive=["occupation"])
    assert hashlib.sha256(source.read_bytes()).hexdigest() in flat
    for number in (len(adult), before.sample_uniques, before.classes.records_below(K), search.suppressed):
        assert f"{number:,}" in flat, number
    assert f"{after.n_records:,} rows" in flat and f"equivalence classes {after.classes.n_classes:,}" in flat
    assert f"k (smallest class) {after.k:,}" in flat and after.k >= K
    assert after.check(search.targets).sentence() in flat
    assert "PASS: meets every target" in flat and "Not safe to release" in flat  # after, and before the fix
    distinct_l = int(after.sensitive_models["occupation"].l_distinct.value)
    assert re.search(rf"distinct l-diversity\s+{distinct_l}\b", text)
    assert f"{100 * after.risk.prosecutor.highest:.2f}%" in flat
    assert "Sign-off" in flat and "Signature" in flat and "privdash" in flat
    assert "never prints the quasi-identifier values of an equivalence class smaller than 5" in flat

    # No value of a class smaller than k: neither of the input's small classes nor of the release's.
    hidden = small_class_values(adult, search.data)
    assert len(hidden) >= 5  # e.g. rare native countries
    assert not [value for value in hidden if contains_token(flat, value)]

    # The saved recipe re-applies the fix: the report of the recipe states the same release.
    assert json.loads(recipe.read_text())["steps"][0]["kind"] == "generalize"
    page = tmp_path / "recipe.html"
    code, _, err = run(
        capsys, "report", str(source), "--qi", ",".join(QIS), "--sensitive", "occupation", "--k", str(K),
        "--recipe", str(recipe), "-o", str(page),
    )  # fmt: skip
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert f"{after.n_records:,}" in html and hashlib.sha256(source.read_bytes()).hexdigest() in html

    if os.environ.get("PRIVDASH_WRITE_SCREENSHOTS") == "1":
        shutil.copyfile(pdf, ROOT / "docs" / "report-adult.pdf")
        (ROOT / "docs" / "screenshots").mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile", str(pdf),
             str(ROOT / "docs" / "screenshots" / "report")],
            check=True,
        )  # fmt: skip


def test_html_without_fix_is_self_contained_and_hides_small_classes(
    capsys: pytest.CaptureFixture[str], adult_paths: tuple[Path, Path], adult: pd.DataFrame, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    code, out, err = run(
        capsys, "report", str(adult_paths[0]), "--qi", ",".join(QIS), "--sensitive", "occupation",
        "--targets", "k=5,l=2,max_risk=0.2", "-o", str(page),
    )  # fmt: skip
    assert code == 0, err  # the verdict fails, the report is written
    assert out.startswith("FAIL: Not safe to release")
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert not EXTERNAL.findall(html)
    assert "<script" not in html.lower() and "<link" not in html.lower()
    assert html.count("<svg") >= 3  # the charts, inline
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", html, flags=re.S)
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))
    # The table as given: its classes of at least k records are listed with values, the smaller ones only counted.
    hidden = small_class_values(adult, None)
    assert len(hidden) >= 5
    assert not [value for value in hidden if contains_token(text, value)]
    sizes = adult.groupby(QIS, dropna=False).size()
    assert f"{int((sizes < K).sum()):,} classes smaller than 5 ({int(sizes[sizes < K].sum()):,} records)" in text
    # Each class the page lists with values has at least k records, as counted here.
    table = html[html.index("The smallest classes that may be shown") :]
    table = table[table.index("<tbody>") : table.index("</tbody>")]
    listed = [
        [unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
    ]
    counted = {tuple(str(v) for v in key): int(n) for key, n in sizes.items()}
    assert len(listed) == 8
    for *values, size in listed:
        assert counted[tuple(values)] == int(size.replace(",", "")) >= K
    assert 'type="text"' in html and 'name="decision"' in html  # the sign-off fields


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-o", "report.docx"], "name the output .pdf, .html or .htm"),
        (["--qi", "sex,income", "-o", "r.html"], "no column 'income'"),
        (["-o", "r.pdf"], "Give the quasi-identifiers with --qi"),
        (["--qi", "sex", "--fix", "least-lossy", "--recipe", "x.json", "-o", "r.html"], "Give one fix"),
        (["--qi", "sex", "--max-suppression", "0.1", "-o", "r.html"], "belong(s) to --fix least-lossy"),
        (["--qi", "sex", "--k", "3", "--targets", "k=5", "-o", "r.html"], "give k once"),
        (["--qi", "sex", "-o", "missing-folder/r.html"], "does not exist"),
    ],
)
def test_bad_input_exits_2(
    capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    source = tmp_path / "adult_subset.csv"
    shutil.copyfile(data_dir / "arx_adult" / "adult_subset.csv", source)
    before = source.read_bytes()
    args = [a if not a.startswith(("r.", "report.", "missing-folder")) else str(tmp_path / a) for a in extra]
    code, _, err = run(capsys, "report", str(source), *args)
    assert code == 2 and message in err, err
    assert "Traceback" not in err and source.read_bytes() == before


#: The quasi-identifiers of ARX's Adult example (salary-class is the sensitive attribute).
ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
#: Fewest words on a page but the last: a third of a page of running text is about 150 words; the sparsest full
#: pages of the Adult report (a chart beside a table) hold about 200.
MIN_WORDS = 120


def pdf_pages(path: Path) -> list[str]:
    """The text of each page of a PDF (pdftotext, layout kept)."""
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    count = int(re.search(r"^Pages:\s+(\d+)", info, flags=re.M).group(1))  # type: ignore[union-attr]
    return [
        subprocess.run(
            ["pdftotext", "-layout", "-f", str(page), "-l", str(page), str(path), "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for page in range(1, count + 1)
    ]


def test_adult_report_with_the_fix_is_a_finished_document(
    capsys: pytest.CaptureFixture[str], adult_paths: tuple[Path, Path], tmp_path: Path
) -> None:
    """k = 5, l = 2, t = 0.2 on salary-class after the least-lossy fix: every target says what it applies to, no page
    but the last is nearly empty, the recipe is a table of steps with its SHA-256 (its JSON attached, not printed),
    and the table's fingerprint is the one the dashboard's report of the same file states."""
    source, hierarchies = adult_paths
    pdf, recipe = tmp_path / "report.pdf", tmp_path / "recipe.json"
    code, _, err = run(
        capsys,
        "report", str(source), "--qi", ",".join(ADULT_QIS), "--sensitive", "salary-class",
        "--targets", "k=5,l=2,t=0.2", "--fix", "least-lossy", "--hierarchies", str(hierarchies),
        "--save-recipe", str(recipe), "-o", str(pdf),
    )  # fmt: skip
    assert code == 0, err
    pages = pdf_pages(pdf)
    words = [len(page.split()) for page in pages]
    assert len(pages) <= 12, words
    assert min(words[:-1]) >= MIN_WORDS, words
    text = "\n".join(pages)
    flat = re.sub(r"\s+", " ", text)
    # in reading order: a table cell's words together (the layout text interleaves the cells of a row)
    read = re.sub(r"\s+", " ", subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout)
    assert "()" not in text and "()" not in read
    for target in ("l = 2 (distinct l-diversity, on salary-class)", "t = 0.2 (equal distance, on salary-class)"):
        assert target in read

    # The recipe: its SHA-256 (of the file privdash saves), its steps in words, no JSON in the body.
    assert hashlib.sha256(recipe.read_bytes()).hexdigest() in flat
    assert "Generalization (global recoding)" in read and "age to level 4 of 4" in read and "sex kept as is" in read
    for fragment in ('"privdash_recipe"', '"kind"', '"params"', '"level":', "leaves x"):
        assert fragment not in text, fragment
    assert not [line for line in text.splitlines() if line.strip() in ("{", "}", "[", "]", "},", "],")]
    # ... which is attached to the PDF, condensed (hierarchy tables by their size).
    listed = subprocess.run(["pdfdetach", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    assert "recipe-condensed.json" in listed
    attached = tmp_path / "attached.json"
    subprocess.run(["pdfdetach", "-save", "1", "-o", str(attached), str(pdf)], check=True, capture_output=True)
    condensed = json.loads(attached.read_text(encoding="utf-8"))
    assert condensed["steps"][0]["kind"] == json.loads(recipe.read_text())["steps"][0]["kind"] == "generalize"
    assert condensed["steps"][0]["params"]["columns"]["age"]["hierarchy"]["rows"].endswith("leaves x 5 levels")

    # The fingerprint: the table's content, as the dashboard's report of the same file (uploaded) states it, and
    # the file's bytes beside it.
    settings = Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=tmp_path)
    services = Services(settings)
    info = services.ingest(source.read_bytes(), filename="adult.csv", session="officer")
    loaded = services.dataset(info.id)
    state = services.initial_state(loaded).updated(dataset=info.id)
    page = report_for_state(services, state)
    assert page.fingerprint.sha256 == TableFingerprint.of(read_table(source)).digest
    assert f"SHA-256 of the table {page.fingerprint.sha256}" in flat
    assert f"SHA-256 of the file's bytes {hashlib.sha256(source.read_bytes()).hexdigest()}" in flat
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", render_html(page), flags=re.S)
    assert "()" not in unescape(re.sub(r"<[^>]+>", " ", body))
