"""The parser of ``privdash attack``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._actions import OldSpelling


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "attack",
        help="measure linkage, singling-out and inference attacks on a released table",
        description="Attack RELEASED with the records of ORIGINAL as targets: linkage (find a target's record from "
        "its quasi-identifiers), singling out (a released record's values describe exactly one person) and "
        "attribute inference (guess --sensitive). Each success rate comes with a 95% Wilson interval, a baseline "
        "(--control records not used for the release, else a random or population guess) and the risk the models "
        "predict. Released generalized values ('20-39', '12***', '*', a hierarchy label) match every original "
        "value they cover; numbers match the nearest original number; a missing value matches anything; text "
        "matches exactly (' Bath' is not 'Bath '). A released value that matches nothing stops the attack (exit "
        "2) unless --allow-unmatched.",
    )
    parser.add_argument("original", help="the original table (the records the release was made from)")
    parser.add_argument("released", help="the released table (its columns must be columns of ORIGINAL)")
    parser.add_argument("--qi", required=True, help="quasi-identifier columns the attacker knows, comma-separated")
    parser.add_argument("--sensitive", metavar="COL", help="the attribute the inference attack guesses")
    parser.add_argument(
        "--control", metavar="FILE", help="original records that were NOT used to make the release (the baseline)"
    )
    parser.add_argument(
        "--hierarchies",
        metavar="DIR",
        type=Path,
        help="folder of ARX hierarchy CSV files ('<column>.csv' or '<name>_hierarchy_<column>.csv'); columns "
        "without a file are matched by the label rules alone",
    )
    parser.add_argument("--recipe", metavar="FILE", type=Path, help="the JSON recipe that made the release")
    parser.add_argument(
        "--n-targets",
        "--targets",
        dest="n_targets",
        metavar="N",
        type=int,
        action=OldSpelling,
        old=["--targets"],
        help="attack N sampled target records (default: every record; --targets is the old spelling: elsewhere "
        "--targets are the release targets)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampling (default 0)")
    parser.add_argument(
        "--allow-unmatched",
        action="store_true",
        help="released values that match no original value stand for no one (a synthetic release's new "
        "categories): measure the attacks with them matching nothing, instead of refusing",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
