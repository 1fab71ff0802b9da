"""``privdash demo-data``: write a generated demo table (and, for ``people``, its data contract)."""

from __future__ import annotations

import argparse
import sys

from privdash.data.demo import people_contract, people_table, uniform_table
from privdash.data.tables import csv_text, write_table


def run(args: argparse.Namespace) -> int:
    if args.kind == "uniform":
        frame = uniform_table(
            50_000 if args.rows is None else args.rows,
            columns=args.columns,
            levels=args.levels,
            seed=0 if args.seed is None else args.seed,
            missing_share=args.missing_share,
        )
    else:
        frame = people_table(5_000 if args.rows is None else args.rows, seed=2024 if args.seed is None else args.seed)
        if args.contract:
            people_contract().save(args.contract)
    if args.output is None:
        sys.stdout.write(csv_text(frame))
    else:
        write_table(frame, args.output)
        print(f"wrote {len(frame):,} rows x {frame.shape[1]} columns to {args.output}", file=sys.stderr)
    return 0
