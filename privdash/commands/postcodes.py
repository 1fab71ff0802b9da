"""``privdash postcodes``: which postcode level can be published, by census population per unit.

The shared-data folder (``PRIVDASH_DATA_DIR``) and the polygon cache come from
:class:`~privdash.application.settings.Settings`, read once per run.
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

import pandas as pd

from privdash.application.settings import Settings
from privdash.data.tables import csv_text
from privdash.errors import DataReadError, ParameterError
from privdash.geo.postcodes import (
    Neighbours,
    PopulationTable,
    PostcodeGeneralization,
    Strategy,
    generalize_postcodes,
    neighbours_from_doogal,
    read_population,
)

from ._common import format_table, print_json

_SHOWN = 25


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    threshold = _min_population(args.min_population)
    population = population_path(args.population, settings.data_dir)
    table = read_population(population)
    strategy = (
        Strategy.parse(args.strategy) if args.strategy else (Strategy.ZIP3 if table.country == "us" else Strategy.MIXED)
    )
    neighbours = _neighbours(args, table, settings) if strategy is Strategy.MERGE else None
    result = generalize_postcodes(table, strategy=strategy, threshold=threshold, neighbours=neighbours)
    if args.output is not None:
        _write_mapping(result, args.output, population, escape_formulas=args.escape_formulas)
    if table.invalid:
        shown = ", ".join(repr(v) for v in table.invalid[:5])
        print(
            f"privdash postcodes: warning: {len(table.invalid):,} invalid codes in {table.source} left out: {shown}"
            + (" ..." if len(table.invalid) > 5 else ""),
            file=sys.stderr,
        )
    if args.json:
        payload = result.to_dict()
        payload["min_population"] = result.threshold  # "threshold" is its old JSON name, kept for readers
        payload["population_file"] = str(population)
        payload["source_format"] = table.source_format
        if neighbours is not None:
            payload["neighbours"] = neighbours.source
        print_json(payload)
    else:
        print(render_text(result, table, neighbours))
    return 0


def _min_population(text: str) -> int:
    cleaned = str(text).replace(",", "").replace("_", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        raise ParameterError(f"--min-population must be a whole number of people, got '{text}'.") from None
    if value != value or value < 0 or value != int(value):
        raise ParameterError(f"--min-population must be a whole number of people >= 0, got '{text}'.")
    return int(value)


def population_path(path: Path, data_dir: Path) -> Path:
    """The population file to read: ``path`` as given, except that a bare file name missing from the working folder
    is looked up in ``data_dir`` and then in its dataset folders (``data_dir/*/name``, the first in name order)."""
    if path.exists() or len(path.parts) != 1:
        return path
    candidates = [data_dir / path.name, *sorted(data_dir.glob(f"*/{glob.escape(path.name)}"))]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise DataReadError(
        f"Population file not found: {path} (neither in the working folder nor in the data folder {data_dir}; "
        "set PRIVDASH_DATA_DIR to the folder of the shared reference data)."
    )


def _neighbours(args: argparse.Namespace, table: PopulationTable, settings: Settings) -> Neighbours:
    if args.neighbours is not None:
        return neighbours_from_doogal(args.neighbours)
    from privdash.geo.geography import district_neighbours, district_polygons_dir

    folder = args.polygons if args.polygons is not None else district_polygons_dir(settings.data_dir)
    if args.polygons is None and not folder.is_dir() and table.nearby is not None:
        return neighbours_from_doogal(table)
    if not folder.is_dir():
        raise ParameterError(
            f"The merge strategy needs district neighbours: polygon folder {folder} not found; pass --polygons DIR "
            "or --neighbours postcode_districts.csv."
        )
    return district_neighbours(folder, cache_dir=args.cache_dir or settings.geo_cache_dir)


def _write_mapping(result: PostcodeGeneralization, path: Path, source: Path, *, escape_formulas: bool = True) -> None:
    if path.exists() and source.exists() and path.resolve() == source.resolve():
        raise ParameterError(f"Refusing to overwrite the input file {source}; choose another output path.")
    frame = pd.DataFrame(
        {
            "original": result.mapping.index,
            "original_population": result.original_populations.reindex(result.mapping.index).to_numpy(),
            "published": result.mapping.to_numpy(),
            "published_population": result.populations.reindex(result.mapping.to_numpy()).to_numpy(),
        }
    )
    try:
        path.write_text(csv_text(frame, escape_formulas=escape_formulas), encoding="utf-8")
    except OSError as exc:
        raise ParameterError(f"Cannot write {path}: {exc.strerror or exc}.") from exc


def render_text(result: PostcodeGeneralization, table: PopulationTable, neighbours: Neighbours | None) -> str:
    """The result as readable plain text: summary lines, the units under the threshold, the merges."""
    what = "districts" if result.country == "uk" else "ZIP3 areas"
    rule = f"a unit fails when population {result.comparison} {result.threshold:,}"
    below = result.below_threshold
    original_below = result.original_below_threshold
    lines = [
        f"population: {table.source} ({table.source_format}, {table.level} level): {result.total_population:,} "
        f"people in {len(result.mapping):,} {what}",
        f"strategy: {result.strategy.value}: {result.strategy.description}",
        f"rule: {rule}",
        f"{what} under the threshold on their own: {len(original_below):,}",
        f"published units: {len(result.populations):,}; under the threshold: {len(below):,}",
    ]
    if neighbours is not None:
        lines.append(f"neighbours: {neighbours.source}")
    if result.strategy is Strategy.ZIP3 and len(original_below):
        lines += ["", "recoded to 000 (smallest first):"]
        rows = [[code, int(pop)] for code, pop in original_below.items()]
        lines.append(format_table(["zip3", "population"], rows[:_SHOWN]))
        if len(rows) > _SHOWN:
            lines.append(f"... and {len(rows) - _SHOWN:,} more (use --json or --output for all)")
    if len(below):
        members = result.members
        lines += ["", "published units under the threshold (smallest first):"]
        sizes = members.reindex(below.index).map(len)
        rows = [[code, int(pop), int(size)] for code, pop, size in zip(below.index, below, sizes, strict=True)]
        lines.append(format_table(["unit", "population", what], rows[:_SHOWN]))
        if len(rows) > _SHOWN:
            lines.append(f"... and {len(rows) - _SHOWN:,} more (use --json or --output for all)")
    else:
        holds = "more than" if result.comparison == "<=" else "at least"
        lines += ["", f"every published unit holds {holds} {result.threshold:,} people."]
    if result.merges:
        lines += ["", "merges (in order):"]
        rows = [[m.unit, m.population, m.into, m.into_population, m.result, m.reason] for m in result.merges]
        lines.append(format_table(["unit", "population", "merged into", "its population", "result", "why"], rows))
    return "\n".join(lines)
