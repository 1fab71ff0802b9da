"""The release report's "Synthetic release" section: in the HTML page and in the PDF's text (pdftotext), with the
method and settings (the seed withheld), the attacks against the control records with the core's rates, the distance,
the estimates and the verdict; the sections after it are numbered on; a report without one is unchanged."""

from __future__ import annotations

import html
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.attack import attack_rows, fmt_rate
from privdash.application.report import build_report, table_fingerprint, write_report
from privdash.application.report.render import render_html
from privdash.application.report.synthetic import (
    K_ANONYMITY_NOTE,
    SyntheticSection,
    plain_verdict,
    settings_rows,
    synthetic_html,
)
from privdash.attack import attack_release
from privdash.data.contract import DataContract
from privdash.data.demo import people_table
from privdash.synthesis import SynthesisSettings
from privdash.targets import PrivacyTargets
from privdash.utility.estimates import compare_estimates

QIS = ["age", "sex", "postcode"]
SEED = 987_654


def text_of(page: str) -> str:
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The demo's columns of interest split into training and control records, and a "release": the training records
    with their ages shuffled (a stand-in for a synthetic table; the section only words the numbers)."""
    data = people_table()[[*QIS, "diagnosis"]]
    control = data.sample(frac=0.2, random_state=1)
    training = data.drop(control.index).reset_index(drop=True)
    released = training.assign(age=training["age"].sample(frac=1.0, random_state=2).to_numpy())
    return data, training, control.reset_index(drop=True), released


def section_of(training: pd.DataFrame, control: pd.DataFrame, released: pd.DataFrame) -> SyntheticSection:
    original = attack_release(training, training, QIS, sensitive="diagnosis", control=control)
    synthetic = attack_release(training, released, QIS, sensitive="diagnosis", control=control, allow_unmatched=True)
    settings = SynthesisSettings(method="full", columns=(*QIS, "diagnosis"), seed=SEED)
    return SyntheticSection(
        dataset="demo people",
        method="fully synthetic",
        settings=settings_rows(settings, 0.2),
        model="sequential CART (synthpop's method), min leaf 5",
        released_rows=len(released),
        rows_replaced=len(released),
        cells_replaced=len(released) * 4,
        training_rows=len(training),
        control_rows=len(control),
        compared=(
            ("The training records themselves (no protection)", attack_rows(original)),
            ("The synthetic table", attack_rows(synthetic)),
        ),
        distance=(("released records equal to a training record", "12.5%"),),
        distance_metric="Gower distance",
        estimates=compare_estimates(training, released, ["mean:age"]),
        verdict=plain_verdict("The attacks on the synthetic table sit near their control baselines."),
    )


def test_the_section_is_in_the_html_and_the_pdf(tables: tuple[pd.DataFrame, ...], tmp_path: Path) -> None:
    data, training, control, released = tables
    contract = DataContract.for_columns(data, quasi_identifiers=QIS, sensitive=["diagnosis"])
    report = build_report(data, contract, PrivacyTargets(k=5), table_fingerprint("people.csv", data))
    plain = text_of(render_html(report))
    assert "Synthetic release" not in plain

    section = section_of(training, control, released)
    with_section = replace(report, synthetic=section)
    page = text_of(render_html(with_section))
    # Numbered after the sections before it; the definitions come after it.
    number = int(re.search(r"(\d+)\. Synthetic release", page).group(1))  # type: ignore[union-attr]
    assert f"{number + 1}. Definitions" in page and f"{number}. Definitions" in plain
    assert "A fully synthetic version of demo people" in page
    assert "sequential CART" in page and "Gower distance" in page
    assert K_ANONYMITY_NOTE in page
    # The attacks: the core's rates, the control baseline, for each release compared.
    synthetic_rows = section.compared[-1][1]
    linkage = synthetic_rows[0].result
    assert f"The synthetic table Linkage {fmt_rate(linkage.targets.rate)}" in page
    assert "control records" in page
    assert "mean:age" in page
    # The seed is withheld.
    assert str(SEED) not in page and "withheld" in page

    path, _seconds = write_report(with_section, tmp_path / "report.pdf")
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    flat = re.sub(r"\s+", " ", text)
    assert f"{number}. Synthetic release" in flat
    assert "k-anonymity does not describe a synthetic table" in flat
    assert "Measured attacks, against the control records" in flat
    assert str(SEED) not in flat


def test_an_estimate_about_a_small_group_is_withheld(tables: tuple[pd.DataFrame, ...]) -> None:
    _data, training, control, released = tables
    section = replace(
        section_of(training, control, released),
        estimates=compare_estimates(training, released, ["share:sex=F by diagnosis"]),
    )
    smallest = int(training["diagnosis"].value_counts().min())
    shown = text_of(synthetic_html(section, 9, threshold=smallest + 1))
    assert "numbers about fewer than" in shown
    assert "numbers about fewer than" not in text_of(synthetic_html(section, 9, threshold=1))
    assert synthetic_html(None, 9, threshold=5) == ""
