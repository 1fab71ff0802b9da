"""The parser of ``privdash postcodes``."""

from __future__ import annotations

import argparse
from pathlib import Path

from privdash.constants import DEFAULT_POPULATION_THRESHOLD, POSTCODE_STRATEGIES

from ._actions import OldSpelling

_STRATEGIES = "{" + ",".join(POSTCODE_STRATEGIES) + "}"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "postcodes",
        help="publishable postcode units by census population (UK districts/areas, US ZIP3)",
        description="Map postcode districts (UK) or 3-digit ZIP codes (US) to published units that hold enough "
        "residents. Strategies: area (every district as its area), outward (districts as they are), mixed "
        "(districts under the threshold fall back to their area), merge (mixed, then units still under the "
        "threshold merged with their smallest neighbour), zip3 (HIPAA Safe Harbor: ZIP3 with the threshold or "
        "fewer people become 000). UK units fail when population < threshold; zip3 when population <= threshold.",
    )
    parser.add_argument(
        "--population",
        type=Path,
        required=True,
        metavar="FILE",
        help="population file: census unit postcodes (Postcode, Total, Males, Females, Occupied_Households), "
        "populations per outward code (postcode, population), the doogal district list, or US ZCTA populations; "
        "a bare file name missing from the working folder is also looked up in the data folder (PRIVDASH_DATA_DIR) "
        "and its dataset folders",
    )
    parser.add_argument(
        "--strategy",
        metavar=_STRATEGIES,
        help="how codes become published units (default: mixed for UK data, zip3 for US data)",
    )
    parser.add_argument(
        "--min-population",
        "--threshold",
        dest="min_population",
        default=str(DEFAULT_POPULATION_THRESHOLD),
        action=OldSpelling,
        old=["--threshold"],
        help=f"people a published unit must hold (default {DEFAULT_POPULATION_THRESHOLD:,}; --threshold is the old "
        "spelling)",
    )
    parser.add_argument(
        "--polygons",
        type=Path,
        metavar="DIR",
        help="merge: folder of district GeoJSON files for adjacency (default: uk_postcode_polygons_wikipedia/geojson "
        "in the data folder)",
    )
    parser.add_argument(
        "--neighbours",
        type=Path,
        metavar="FILE",
        help="merge: the doogal postcode_districts.csv; its 'Nearby districts' list replaces polygon adjacency",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="where processed polygons are cached (default: PRIVDASH_CACHE_DIR, else $XDG_CACHE_HOME/privdash or "
        "~/.cache/privdash)",
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="also write the mapping (original, published) as CSV"
    )
    parser.add_argument(
        "--no-escape-formulas",
        dest="escape_formulas",
        action="store_false",
        help="write text cells that start with = + - @ as they are (default: prefixed with ' for spreadsheets)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
