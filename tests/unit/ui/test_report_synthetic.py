"""The Report button's use of the Fix page's synthetic release: included when it was made from the report's dataset,
left out with a note when it has expired, ignored when it belongs to another dataset."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dashboard.ui.report import with_synthetic
from privdash.application.report import build_report, table_fingerprint
from privdash.application.report.synthetic import SyntheticSection
from privdash.application.synthetic_release import SyntheticFiles
from privdash.data.contract import DataContract
from privdash.targets import PrivacyTargets


def section(dataset: str) -> SyntheticSection:
    return SyntheticSection(
        dataset=dataset,
        method="fully synthetic",
        settings=(("method", "fully synthetic"),),
        model="sequential CART",
        released_rows=8,
        rows_replaced=8,
        cells_replaced=16,
        training_rows=8,
        control_rows=2,
        compared=(),
        distance=(),
        distance_metric="Gower distance",
        estimates=(),
        verdict="k-anonymity does not describe a synthetic table.",
    )


def test_the_release_of_the_reports_dataset_is_included(tmp_path: Path) -> None:
    data = pd.DataFrame({"age": [30, 40] * 5, "sex": ["F", "M"] * 5})
    contract = DataContract.for_columns(data, quasi_identifiers=["age", "sex"])
    report = build_report(data, contract, PrivacyTargets(k=2), table_fingerprint("people.csv", data))
    files = SyntheticFiles(tmp_path / "synthetic", ttl=60)
    with files._cache() as cache:
        cache.set("mine", {"section": section("people.csv")})
        cache.set("other", {"section": section("adult.csv")})
    included = with_synthetic(report, files, "mine").synthetic
    assert included is not None and included.dataset == "people.csv"
    assert with_synthetic(report, files, "other").synthetic is None
    expired = with_synthetic(report, files, "gone")
    assert expired.synthetic is None and "has expired" in expired.left_out[-1]
