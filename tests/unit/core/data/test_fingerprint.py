"""The table fingerprint outside the DP package: the same digests as before it moved, and no OpenDP import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from privdash.data.demo import people_table
from privdash.data.fingerprint import TableFingerprint, frame_sha256
from privdash.dp import ledger, release

# Digests computed by privdash.dp.ledger before the fingerprint code moved to privdash.data.fingerprint.
EXPECTED = {
    "adult": (
        "6ad50ade490806dee807aa9ed89b3a831e3df66195c438ad1eeedbc2e7bce639",
        30162,
        (355134455797570, 1876767470181511, 1879690040635592),
        "b699c0bba2d9755df72517ae1fd627e6da3171459b07c0a92577532f815eed99",
    ),
    "testdata": (
        "c153b1d1fd302f9763e9e883c5c0542824ed9aee059d78cd9bddbcd3d4aeb39d",
        4580,
        (3558829051933748, 5210341138047470, 13350577416391140),
        "4e78e747d4f27ed7c3d1c923912b77e56abe169c048d686eb754c61e65d0f476",
    ),
    "people": (
        "9323cca7580649545b08e633049ed3a1a7813ebe012fa7f0195856a2aafdb91a",
        5000,
        (1275558582357406, 18465061249186695, 27686113016819602),
        "2c81a56dab45c4e8ba14fb3736615dae2cf49be6cbda2c985eea1ff3fccb3407",
    ),
    "mixed": (
        "7033b124c52d5244e67868f888f0897cb09a334038b9d715a61540219d810edd",
        4,
        (4921422856547292297, 13402337015390050217, 13664169677897281441),
        "0434144df4839542f5520ebbdd4316eb802af6d012c3606cff3afaf9cf8e9ec7",
    ),
}


def _tables(data_dir: Path) -> dict[str, pd.DataFrame]:
    return {
        "adult": pd.read_csv(data_dir / "arx_adult" / "adult.csv", sep=";"),
        "testdata": pd.read_csv(data_dir / "sdcmicro_testdata" / "testdata.csv"),
        "people": people_table(5000),
        "mixed": pd.DataFrame(
            {
                "a": [1, 2.0, None, 30],
                "b": ["30.0", "007", "+30", None],
                "c": [True, False, True, True],
                "d": pd.to_datetime(["2020-01-01", None, "2021-02-03", "2020-01-01"]),
            }
        ),
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_digests_are_unchanged(name: str, data_dir: Path) -> None:
    data = _tables(data_dir)[name]
    digest, rows, smallest, sha = EXPECTED[name]
    fingerprint = TableFingerprint.of(data)
    assert fingerprint.digest == digest
    assert fingerprint.rows == rows
    assert fingerprint.sketch[:3] == smallest
    assert frame_sha256(data) == sha


def test_ledger_and_release_use_the_same_code() -> None:
    assert ledger.TableFingerprint is TableFingerprint
    assert release.category_text(["30.0", "007", "+30"]).tolist() == ["30", "007", "30"]


def test_fingerprint_does_not_import_opendp() -> None:
    code = (
        "import sys, pandas as pd\n"
        "from privdash.data.fingerprint import TableFingerprint\n"
        "from privdash.application.report.model import content_sha256\n"
        "TableFingerprint.of(pd.DataFrame({'a': [1, 2]}))\n"
        "print(content_sha256(pd.DataFrame({'a': [1, 2]})))\n"
        "assert 'opendp' not in sys.modules, 'OpenDP was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
