"""``privdash report`` on a table with several rows per person (visits): every count of the report is of people.

The table is built here from sdcMicro's testdata (800 people, 1 to 3 visit rows each, a ``clinic`` per visit). The
numbers the PDF (read back with pdftotext) and the HTML file print are checked against ``diagnose(..., entity=...)``
and against a brute-force pandas oracle of the person-level classes (a person's key: the set, or the multiset, of
their QI tuples); the least-lossy fix is checked by re-diagnosing its released table per person.
"""

from __future__ import annotations

import json
import re
import subprocess
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.cli import main
from privdash.data.tables import read_table
from privdash.measure.diagnose import diagnose
from privdash.transform.steps import Recipe, apply_recipe

QIS = ["urbrur", "sex", "age", "clinic"]  # the order of the columns, as the contract lists them
PERSON = "person"
K = 3


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def text_of(page: str) -> str:
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))


def pdf_text(path: Path) -> str:
    done = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True)
    return re.sub(r"\s+", " ", done.stdout)


@pytest.fixture(scope="module")
def visits_path(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """800 people of testdata with 1, 2 or 3 visits each (the person's QIs repeated, a clinic per visit)."""
    people = pd.read_csv(data_dir / "sdcmicro_testdata" / "testdata.csv").head(800)
    people[PERSON] = [f"P{i:04d}" for i in range(len(people))]
    visits = people.loc[people.index.repeat(1 + np.arange(len(people)) % 3)].reset_index(drop=True)
    visit = visits.groupby(PERSON).cumcount().to_numpy()
    visits["clinic"] = np.array(["north", "south", "east"])[(np.arange(len(visits)) * 7 + visit) % 3]
    path = tmp_path_factory.mktemp("visits") / "visits.csv"
    visits.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def visits(visits_path: Path) -> pd.DataFrame:
    return read_table(visits_path)


def oracle_sizes(data: pd.DataFrame, key: str = "set") -> pd.Series:
    """Class size of each person, by brute force: the person's key is the sorted tuple of their distinct QI tuples
    (``set``) or of (tuple, rows) pairs (``multiset``); people with equal keys form a class."""
    tuples = data[QIS].astype(str).agg("|".join, axis=1)
    counted = pd.DataFrame({PERSON: data[PERSON], "tuple": tuples}).value_counts().reset_index(name="n")
    elements = counted["tuple"] if key == "set" else counted["tuple"] + "#" + counted["n"].astype(str)
    keys = elements.groupby(counted[PERSON]).agg(lambda values: tuple(sorted(values)))
    return keys.map(keys.value_counts())


def glance(text: str, label: str) -> str:
    match = re.search(rf"{re.escape(label)} ([\d,]+(?: \([\d.]+%\))?)", text)
    assert match, label
    return match.group(1)


@pytest.mark.parametrize("key", ["set", "multiset"])
def test_pdf_counts_people_as_diagnose_does(
    capsys: pytest.CaptureFixture[str], visits_path: Path, visits: pd.DataFrame, tmp_path: Path, key: str
) -> None:
    output = tmp_path / "report.pdf"
    code, out, err = run(
        capsys, "report", str(visits_path), "--qi", ",".join(QIS), "--entity", PERSON, "--entity-key", key,
        "--targets", f"k={K}", "-o", str(output),
    )  # fmt: skip
    assert code == 0, err
    expected = diagnose(visits, QIS, entity=PERSON, entity_key=key, k_values=(K,))
    sizes = oracle_sizes(visits, key)
    # The core's person-level diagnosis agrees with the oracle.
    assert expected.n_records == len(sizes) == 800 and expected.rows == len(visits)
    assert expected.k == sizes.min() and expected.sample_uniques == int((sizes == 1).sum())
    assert expected.classes.n_classes == int((1 / sizes).sum().round())
    below = int((sizes < K).sum())
    assert expected.classes.records_below(K) == below > 0
    # The verdict on stdout counts people.
    assert out.startswith(f"FAIL: Not safe to release: {expected.sample_uniques:,} of 800 people")
    assert f"the targets leave {below:,} people" in out
    text = pdf_text(output)
    where = "the set of their QI tuples (set)" if key == "set" else "their QI tuples with the number of rows"
    assert (
        f"Every count of this report is of people, not rows: 800 people in {len(visits):,} rows of the released "
        f"table (person id '{PERSON}'); a person's key is {where}" in text
    )
    assert glance(text, "people") == "800" and glance(text, "rows") == f"{len(visits):,}"
    assert glance(text, "equivalence classes") == f"{expected.classes.n_classes:,}"
    assert glance(text, "sample uniques").startswith(f"{expected.sample_uniques:,} (")
    assert glance(text, "people at risk (fail a target)") == f"{below:,}"
    small = expected.classes.sizes < K
    assert (
        f"{int(small.sum()):,} classes smaller than {K} ({int(expected.classes.counts[small].sum()):,} people) are "
        "counted, never listed." in text
    )
    assert "The QI-combination analysis is left out" in text
    assert "records at risk (risk" not in text and "people at risk (risk > 0.2)" in text


def test_html_lists_person_keys_of_large_classes_only(
    capsys: pytest.CaptureFixture[str], visits_path: Path, visits: pd.DataFrame, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    code, _, err = run(
        capsys, "report", str(visits_path), "--qi", ",".join(QIS), "--entity", PERSON, "--targets", f"k={K}",
        "-o", str(page),
    )  # fmt: skip
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    classes = diagnose(visits, QIS, entity=PERSON).classes
    keys = classes.keys()
    counted = dict(zip(keys["person_key"], classes.sizes, strict=True))
    table = html[html.index("The smallest classes that may be shown") :]
    assert "QI tuples of each person of the class" in table[: table.index("</thead>")]
    table = table[table.index("<tbody>") : table.index("</tbody>")]
    listed = [
        [unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
    ]
    assert len(listed) == 8
    for person_key, size in listed:
        assert counted[person_key] == int(size.replace(",", "")) >= K
    # No key of a class smaller than k is printed (a key of several tuples would single its few people out).
    text = text_of(html)
    hidden = [key for key, size in counted.items() if size < K and ";" in key]
    assert len(hidden) > 20 and not [key for key in hidden if key in text]


def test_least_lossy_fix_is_judged_on_people(
    capsys: pytest.CaptureFixture[str], visits_path: Path, visits: pd.DataFrame, tmp_path: Path
) -> None:
    page, recipe = tmp_path / "fixed.html", tmp_path / "recipe.json"
    code, out, err = run(
        capsys, "report", str(visits_path), "--qi", ",".join(QIS), "--entity", PERSON, "--targets", f"k={K}",
        "--fix", "least-lossy", "--save-recipe", str(recipe), "-o", str(page),
    )  # fmt: skip
    assert code == 0, err
    assert out.startswith("PASS")
    steps = json.loads(recipe.read_text(encoding="utf-8"))["steps"]
    assert steps[0]["params"]["entity"] == {"column": PERSON, "key": "set"}
    # The released table, re-made from the recipe and re-diagnosed per person, meets k on people (and the oracle).
    released, _ = apply_recipe(visits, Recipe.load(recipe))
    after = diagnose(released, QIS, entity=PERSON)
    assert after.k >= K and oracle_sizes(released).min() >= K
    # Whole people are suppressed: every released person keeps all their rows.
    rows = visits[PERSON].value_counts()
    kept = released[PERSON].value_counts()
    assert (kept == rows[kept.index]).all()
    people_out, rows_out = len(kept), len(released)
    assert 0 < 800 - people_out <= 0.05 * 800
    text = text_of(page.read_text(encoding="utf-8"))
    assert f"Every count of this report is of people, not rows: {people_out:,} people in {rows_out:,} rows" in text
    assert f"people {after.n_records:,} rows {rows_out:,} equivalence classes {after.classes.n_classes:,}" in text
    assert (
        f"people suppressed by the fix {800 - people_out:,} rows suppressed by the fix {len(visits) - rows_out:,}"
        in text
    )
    assert f"k (smallest class) {after.k:,}" in text
    assert "Least-lossy generalization meeting k = 3 counted in people" in text
    before = diagnose(visits, QIS, entity=PERSON)
    assert f"Before the fix: Not safe to release: {before.sample_uniques:,} of 800 people" in text

    # The saved recipe, re-applied by --recipe without --entity, is reported in people (its person id).
    again = tmp_path / "again.pdf"
    code, out, err = run(
        capsys, "report", str(visits_path), "--qi", ",".join(QIS), "--targets", f"k={K}", "--recipe", str(recipe),
        "-o", str(again),
    )  # fmt: skip
    assert code == 0, err
    assert "the report counts people too" in err and out.startswith("PASS")
    text = pdf_text(again)
    assert f"{people_out:,} people in {rows_out:,} rows of the released table (person id '{PERSON}')" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--qi", "sex,age", "--entity", "patient"], "no column 'patient'"),
        (["--qi", "sex,age,person", "--entity", "person"], "person-id column 'person' cannot also be a quasi-id"),
        (["--qi", "sex,age", "--sensitive", "person", "--entity", "person"], "cannot also be a sensitive"),
        (["--qi", "sex,age", "--entity-key", "multiset"], "name the person id with --entity"),
        (["--qi", "sex,age", "--entity", "person", "--missing", "wildcard"], "wildcard"),
        (["--qi", "sex,age", "--entity", "person", "--model-risk", "default"], "Model-based risk"),
        (["--qi", "sex,age", "--entity", "person", "--household", "ori_hid"], "household id"),
        (["--qi", "sex,age", "--entity", "person", "--fix", "least-lossy", "--targets", "k=2,average_risk=0.1"],
         "cannot be searched with a person id"),
    ],
)  # fmt: skip
def test_bad_input_exits_2(
    capsys: pytest.CaptureFixture[str], visits_path: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    code, _, err = run(capsys, "report", str(visits_path), *extra, "-o", str(tmp_path / "r.html"))
    assert code == 2 and message in err, err
    assert "Traceback" not in err and not (tmp_path / "r.html").exists()
