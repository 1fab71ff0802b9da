"""Geomasking speed: donut masking and random perturbation of 100,000 home locations, with spatial k-anonymity.

Target: one geomask step (masking + spatial k) on 100,000 points in under 5 s, with the postcode-area constraint.

The points imitate home locations in Great Britain: postcode district centroids (doogal) drawn in proportion to their
2011 population, each moved by a normal offset of about 1.5 km (so that towns are dense and the countryside
sparse). Polygon layers are loaded (and cached) before timing; the times are those of the step itself.

Usage: ``python -m bench.bench_geomask [--rows N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import pandas as pd

from bench._common import DATA_DIR, best_time, data_path, machine, peak_memory
from privdash.geo.geography import load_areas, load_districts
from privdash.geo.geomask import coordinate_perturbation, donut_masking, masking_points, spatial_k_anonymity
from privdash.transform.steps import TransformResult


def homes(rows: int, seed: int = 3) -> pd.DataFrame:
    districts = pd.read_csv(data_path("uk_postcode_districts_doogal", "postcode_districts.csv"))
    districts = districts[districts["Population"].notna() & districts["Latitude"].notna()]
    rng = np.random.default_rng(seed)
    weights = districts["Population"].to_numpy(dtype=float)
    picks = rng.choice(len(districts), rows, p=weights / weights.sum())
    lat = districts["Latitude"].to_numpy()[picks] + rng.normal(0, 0.0135, rows)
    lon = districts["Longitude"].to_numpy()[picks] + rng.normal(0, 0.022, rows)
    return pd.DataFrame({"id": np.arange(rows), "lat": lat, "lon": lon})


def main() -> None:
    parser = argparse.ArgumentParser(description="geomasking benchmark")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    data = homes(args.rows)
    areas = load_areas(DATA_DIR / "uk_postcode_areas_geolytix" / "postcode_areas.geojson")
    districts = load_districts(DATA_DIR / "uk_postcode_polygons_wikipedia" / "geojson")
    print(f"points: {args.rows:,} (GB homes imitated from doogal district centroids)")
    print()
    cases: dict[str, Callable[[], TransformResult]] = {
        "donut 100-1000 m": lambda: donut_masking(
            data, latitude="lat", longitude="lon", min_distance=100, max_distance=1000, seed=1
        ),
        "donut 100-1000 m, within postcode area": lambda: donut_masking(
            data,
            latitude="lat",
            longitude="lon",
            min_distance=100,
            max_distance=1000,
            seed=1,
            within="area",
            polygons=areas,
        ),
        "donut 100-1000 m, within postcode district": lambda: donut_masking(
            data,
            latitude="lat",
            longitude="lon",
            min_distance=100,
            max_distance=1000,
            seed=1,
            within="district",
            polygons=districts,
        ),
        "gaussian perturbation, sigma 500 m": lambda: coordinate_perturbation(
            data, latitude="lat", longitude="lon", scale=500, seed=1
        ),
    }
    print("| step (masking + spatial k) | time | peak memory | spatial k min / median | share k < 5 | "
          "displacement min / median / max (m) | outside polygon |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, run in cases.items():
        seconds = best_time(run, repeat=args.repeat)
        peak = peak_memory(run)
        summary = run().summary
        k, d = summary["spatial_k"], summary["displacement_m"]
        print(
            f"| {name} | {seconds:.2f} s | {peak.total / 2**20:.0f} MiB | {k['min']} / {k['median']:g} | "
            f"{k['share_below']:.1%} | {d['min']:.0f} / {d['median']:.0f} / {d['max']:.0f} | "
            f"{summary.get('outside_polygon', '-')} |"
        )
    masked = cases["donut 100-1000 m"]().data
    seconds = best_time(
        lambda: spatial_k_anonymity(data["lat"], data["lon"], masked["lat"], masked["lon"]), repeat=args.repeat
    )
    print()
    print(f"spatial k alone (k-d tree, {args.rows:,} points): {seconds:.3f} s")
    for sample in (None, 2_000):
        seconds = best_time(
            lambda sample=sample: masking_points(data, masked, latitude="lat", longitude="lon", sample=sample),
            repeat=args.repeat,
        )
        shown = "every point" if sample is None else f"a sample of {sample:,} (the Fix page's map)"
        print(f"map points with their spatial k, {shown}: {seconds:.3f} s")


if __name__ == "__main__":
    main()
