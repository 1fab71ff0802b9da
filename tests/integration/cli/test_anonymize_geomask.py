from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.cli import main

EARTH_RADIUS = 6_371_008.8


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def haversine(lat1: np.ndarray, lon1: np.ndarray, lat2: np.ndarray, lon2: np.ndarray) -> np.ndarray:
    p1, p2, dl = np.radians(lat1), np.radians(lat2), np.radians(lon2 - lon1)
    h = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS * np.arcsin(np.sqrt(h))


@pytest.fixture()
def points(data_dir: Path, tmp_path: Path) -> Path:
    """400 GB postcode district centroids (doogal), one of them without coordinates."""
    frame = pd.read_csv(data_dir / "uk_postcode_districts_doogal" / "postcode_districts.csv", nrows=400)
    path = tmp_path / "homes.csv"
    frame[["Postcode", "Latitude", "Longitude", "Population"]].to_csv(path, index=False)
    return path


def recipe(tmp_path: Path, data_dir: Path, **params: object) -> Path:
    step = {
        "latitude": "Latitude",
        "longitude": "Longitude",
        "min_distance": 500,
        "max_distance": 5000,
        "seed": 12,
        "within": "area",
        "data_dir": str(data_dir),
    }
    step.update(params)
    path = tmp_path / "geomask.json"
    path.write_text(json.dumps({"privdash_recipe": 1, "steps": [{"kind": "donut_masking", "params": step}]}))
    return path


def test_recipe_masks_the_points_and_reports_spatial_k(
    capsys: pytest.CaptureFixture[str], points: Path, data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "masked.csv"
    code, stdout, err = run(
        capsys, "anonymize", str(points), "--recipe", str(recipe(tmp_path, data_dir)), "-o", str(out), "--json"
    )
    assert code == 0, err
    summary = json.loads(stdout)["steps"][0]["summary"]
    original, masked = pd.read_csv(points), pd.read_csv(out)
    assert masked["Postcode"].equals(original["Postcode"])
    present = original["Latitude"].notna().to_numpy()
    assert summary["missing"] == int((~present).sum()) and masked.loc[~present, "Latitude"].isna().all()
    o, m = original.loc[present], masked.loc[present]
    distance = haversine(
        o["Latitude"].to_numpy(), o["Longitude"].to_numpy(), m["Latitude"].to_numpy(), m["Longitude"].to_numpy()
    )
    assert distance.min() >= 500 - 0.01 and distance.max() <= 5000 + 0.01
    assert summary["displacement_m"]["median"] == pytest.approx(np.median(distance), abs=0.01)
    # Spatial k recounted by brute force from the two files.
    matrix = haversine(
        m["Latitude"].to_numpy()[:, None], m["Longitude"].to_numpy()[:, None],
        o["Latitude"].to_numpy()[None, :], o["Longitude"].to_numpy()[None, :],
    )  # fmt: skip
    k = (matrix <= distance[:, None] * (1 + 1e-7)).sum(axis=1)
    assert summary["spatial_k"]["min"] == k.min()
    assert summary["spatial_k"]["median"] == pytest.approx(np.median(k))
    assert summary["spatial_k"]["below_target"] == int((k < 5).sum())
    assert summary["within"] == "area"
    # The text report shows the same figures.
    code, stdout, err = run(capsys, "anonymize", str(points), "--recipe", str(recipe(tmp_path, data_dir)))
    assert code == 0, err
    assert f"spatial_k: min={k.min()}" in stdout and "displacement_m: min=" in stdout


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"min_distance": 5000, "max_distance": 5000}, "must be smaller than max_distance"),
        ({"min_distance": -5}, "min_distance must be >= 0"),
        ({"latitude": "lat"}, "Unknown coordinate column"),
        ({"within": "county"}, "within must be one of"),
    ],
)
def test_bad_recipe_exits_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    points: Path,
    data_dir: Path,
    tmp_path: Path,
    params: dict[str, object],
    message: str,
) -> None:
    out = tmp_path / "masked.csv"
    code, _, err = run(
        capsys, "anonymize", str(points), "--recipe", str(recipe(tmp_path, data_dir, **params)), "-o", str(out)
    )
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_coordinates_out_of_range_exit_2(
    capsys: pytest.CaptureFixture[str], points: Path, data_dir: Path, tmp_path: Path
) -> None:
    frame = pd.read_csv(points)
    frame.loc[3, "Latitude"] = 123.4
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    out = tmp_path / "masked.csv"
    code, _, err = run(capsys, "anonymize", str(bad), "--recipe", str(recipe(tmp_path, data_dir)), "-o", str(out))
    assert code == 2
    assert "outside [-90, 90]" in err and "123.4" in err
    assert not out.exists()
