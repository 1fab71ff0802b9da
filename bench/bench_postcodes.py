"""Postcode strategies, polygon processing and map payloads on the real data, in one run.

Targets (issue: postcode population maps):
* every strategy on the real data (England and Wales outward codes, US ZCTA) well under 1 s, merge included;
* the one-off polygon processing is cached: a cached load and a map redraw (strategy + dissolve + GeoJSON) are
  interactive (redraw under 1 s);
* the district layer plus the figure JSON well under 3 MB.

Also measured: reading each population file, a synthetic census unit-postcode table (``--census-rows``, the 2011
England and Wales table has about 1.3 million units), and recoding a dataset's postcode column.

Usage: ``python -m bench.bench_postcodes [--repeat R] [--census-rows N] [--data-rows N]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import best_time, data_path, machine
from privdash.geo import geography
from privdash.geo.postcodes import (
    generalize_postcodes,
    neighbours_from_doogal,
    population_counts,
    read_population,
)
from privdash.measure.classes import equivalence_classes

EW = ("uk_postcode_population_ew2011_outward", "ew2011_outward_code_population.csv")
DOOGAL = ("uk_postcode_districts_doogal", "postcode_districts.csv")
ZCTA = ("us_zcta2010_population", "2010-pop-by-zcta.csv")
POLYGONS = ("uk_postcode_polygons_wikipedia", "geojson")
AREAS = ("uk_postcode_areas_geolytix", "postcode_areas.geojson")
INWARD_LETTERS = np.array(list("ABDEFGHJLNPQRSTUWXYZ"))


def once(function) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def synthetic_units(districts: pd.Index, rows: int, seed: int = 3) -> pd.Series:
    """Unit postcodes in the census 7-character form, spread over the real districts."""
    rng = np.random.default_rng(seed)
    outward = districts.to_numpy(dtype=str)[rng.integers(0, len(districts), rows)]
    digit = rng.integers(0, 10, rows).astype(str)
    letters = INWARD_LETTERS[rng.integers(0, 20, (rows, 2))]
    inward = np.char.add(np.char.add(digit, letters[:, 0]), letters[:, 1])
    padded = np.char.ljust(outward, 4)
    return pd.Series(np.char.add(padded, inward))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--census-rows", type=int, default=1_300_000)
    parser.add_argument("--data-rows", type=int, default=1_000_000)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rows: list[tuple[str, str, str]] = []

    read_ew = once(lambda: read_population(data_path(*EW)))
    read_doogal = once(lambda: read_population(data_path(*DOOGAL)))
    read_us = once(lambda: read_population(data_path(*ZCTA)))
    ew, doogal, us = (
        read_population(data_path(*EW)),
        read_population(data_path(*DOOGAL)),
        read_population(data_path(*ZCTA)),
    )
    rows += [
        ("read E&W outward file (2,297 rows)", f"{read_ew:.3f} s", "-"),
        ("read doogal districts (3,114 rows, nearby lists)", f"{read_doogal:.3f} s", "-"),
        ("read US ZCTA file (33,092 rows)", f"{read_us:.3f} s", "-"),
    ]

    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "cache"
        first_districts = once(lambda: geography.load_districts(data_path(*POLYGONS), cache_dir=cache))
        first_areas = once(lambda: geography.load_areas(data_path(*AREAS), cache_dir=cache))
        cached = once(lambda: geography.load_districts(data_path(*POLYGONS), cache_dir=cache))
        layer = geography.load_districts(data_path(*POLYGONS), cache_dir=cache)
        rows += [
            ("district polygons: first processing (read, repair, clean, adjacency, simplify)",
             f"{first_districts:.2f} s", "one-off, cached"),
            ("area polygons (GeoLytix): first processing", f"{first_areas:.2f} s", "one-off, cached"),
            ("district layer: load from the disk cache (new process)", f"{cached:.3f} s", "-"),
        ]  # fmt: skip

        polygon_neighbours = layer.neighbours()
        doogal_neighbours = neighbours_from_doogal(doogal)
        strategies = {
            "area (E&W)": lambda: generalize_postcodes(ew, strategy="area"),
            "outward (E&W)": lambda: generalize_postcodes(ew, strategy="outward"),
            "mixed (E&W)": lambda: generalize_postcodes(ew, strategy="mixed"),
            "merge, polygon adjacency (E&W)": lambda: generalize_postcodes(
                ew, strategy="merge", neighbours=polygon_neighbours
            ),
            "merge, doogal nearby list (E&W)": lambda: generalize_postcodes(
                ew, strategy="merge", neighbours=doogal_neighbours
            ),
            "mixed (doogal, UK-wide)": lambda: generalize_postcodes(doogal, strategy="mixed"),
            "zip3 Safe Harbor (US)": lambda: generalize_postcodes(us, strategy="zip3"),
        }  # fmt: skip
        total = 0.0
        for name, function in strategies.items():
            seconds = best_time(function, repeat=args.repeat)
            total += seconds
            rows.append((f"strategy {name}", f"{seconds * 1000:.1f} ms", "< 1 s"))
        rows.append(("all seven strategies together", f"{total * 1000:.0f} ms", "well under 1 s"))
        to_dict = best_time(
            lambda: generalize_postcodes(ew, strategy="merge", neighbours=polygon_neighbours).to_dict(),
            repeat=args.repeat,
        )
        rows.append(("merge + to_dict (the CLI --json payload)", f"{to_dict * 1000:.1f} ms", "-"))

        districts_json = json.dumps(layer.geojson(), separators=(",", ":"))
        merge = generalize_postcodes(ew, strategy="merge", neighbours=polygon_neighbours)

        def redraw() -> str:
            result = generalize_postcodes(ew, strategy="merge", neighbours=polygon_neighbours)
            return json.dumps(layer.units_geojson(result), separators=(",", ":"))

        redraw_time = best_time(redraw, repeat=args.repeat)
        units_json = redraw()
        area_time = best_time(
            lambda: layer.units_geojson(generalize_postcodes(ew, strategy="area")), repeat=args.repeat
        )
        figure_bytes = _figure_size(layer.geojson(), merge)
        rows += [
            ("district layer GeoJSON (2,736 features, 5 decimals)", f"{len(districts_json) / 1e6:.2f} MB",
             "< 3 MB with figure"),
            ("plotly choropleth figure JSON over the district layer", f"{figure_bytes / 1e6:.2f} MB", "< 3 MB"),
            ("redraw: merge + dissolve to 1,377 units + GeoJSON text", f"{redraw_time * 1000:.0f} ms", "< 1 s"),
            ("merged units GeoJSON", f"{len(units_json) / 1e6:.2f} MB", "-"),
            ("redraw: area strategy dissolved to 106 areas", f"{area_time * 1000:.0f} ms", "< 1 s"),
        ]  # fmt: skip

        census_path = Path(folder) / "Postcode_Estimates_Table_1.csv"
        units = synthetic_units(ew.population().index, args.census_rows).drop_duplicates()
        rng = np.random.default_rng(5)
        males = rng.integers(0, 40, len(units))
        females = rng.integers(0, 40, len(units))
        pd.DataFrame(
            {"Postcode": units, "Total": males + females, "Males": males, "Females": females,
             "Occupied_Households": rng.integers(0, 30, len(units))}
        ).to_csv(census_path, index=False)  # fmt: skip
        read_census = once(lambda: read_population(census_path))
        census = read_population(census_path)
        aggregate = best_time(lambda: generalize_postcodes(census, strategy="mixed"), repeat=1)
        rows += [
            (f"read census unit-postcode table ({len(units):,} synthetic units, 7-character form)",
             f"{read_census:.2f} s", "-"),
            ("mixed strategy on the unit-level table (sum to districts included)", f"{aggregate:.3f} s", "-"),
        ]  # fmt: skip

    data = pd.DataFrame(
        {
            "postcode": synthetic_units(ew.population().index, args.data_rows, seed=11).str.lower(),
            "sex": np.random.default_rng(1).choice(["F", "M"], args.data_rows),
        }
    )
    mixed = generalize_postcodes(ew, strategy="mixed")
    recode = best_time(lambda: mixed.recode(data, column="postcode"), repeat=max(1, args.repeat // 2))
    recoded = mixed.recode(data, column="postcode").data
    classes = equivalence_classes(recoded, ["postcode", "sex"])
    counts = best_time(
        lambda: population_counts(classes, column="postcode", populations=mixed.populations), repeat=args.repeat
    )
    distinct = data["postcode"].nunique()
    rows += [
        (f"recode a postcode column ({args.data_rows:,} rows, {distinct:,} distinct units)", f"{recode:.3f} s", "-"),
        (f"population counts F_j for {classes.n_classes:,} classes", f"{counts * 1000:.1f} ms", "-"),
    ]

    print()
    print("| measurement | result | target |")
    print("|---|---|---|")
    for name, value, target in rows:
        print(f"| {name} | {value} | {target} |")


def _figure_size(districts: dict, result) -> int:  # type: ignore[no-untyped-def,type-arg]
    """Bytes of a plotly choropleth of the district layer coloured by the published unit's population."""
    import plotly.graph_objects as go

    populations = result.populations.reindex(result.mapping.to_numpy()).to_numpy()
    codes = [f["id"] for f in districts["features"]]
    by_district = pd.Series(populations, index=result.mapping.index).reindex(codes)
    figure = go.Figure(
        go.Choropleth(
            geojson=districts,
            locations=codes,
            z=by_district.fillna(0).to_numpy(),
            featureidkey="id",
            marker_line_width=0,
        )
    )
    figure.update_geos(fitbounds="locations", visible=False)
    return len(figure.to_json())


if __name__ == "__main__":
    main()
