"""``privdash anonymize FILE --step 'TECHNIQUE NAME=VALUE ...'``: apply fix techniques in order, as the Fix page's
step list and its "Perturb and mask" section do, from the technique descriptions
(:mod:`privdash.application.techniques`).

A step is the technique's name followed by its settings, ``name=value`` (one argument, quoted): ``--step
'record_suppression k=5 max_suppression=5%'``, ``--step 'generalize column=age rule=intervals:5,10,20 level=1'``,
``--step 'add_noise columns=income share=0.1 seed=7'``. Numbers, lists of columns (``a,b``) and true / false are
read by the parameter's constraint; a share may be written as a percentage (``5%``); the hierarchy ``rule`` of
``generalize`` is ``BUILDER:PARAMETER`` as the Fix page's rule field (``dates:month,year``, ``dataset`` is not
available here); an object setting (``release``) is JSON. ``--step 'TECHNIQUE help'`` lists the settings.

The quasi-identifiers (``--qi``) and sensitive attributes (``--sensitive``) form the data contract the steps read
(record suppression, local suppression, microaggregation and the search work on the quasi-identifiers). The recipe
of the steps (``--save-recipe``) re-applies them with ``privdash anonymize --recipe``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

import pandas as pd

from privdash.application.fixes import check_spec, describe_result, rule_from_text, run_fixes
from privdash.application.settings import Settings
from privdash.application.techniques import Technique, check_settings, parse_settings, technique
from privdash.data.contract import ColumnRole, suggest_contract
from privdash.data.tables import write_table
from privdash.errors import ParameterError
from privdash.measure.classes import MissingPolicy
from privdash.transform.steps import Recipe, Step, TransformResult, apply_step

from ._common import format_table, print_json, split_columns

__all__ = ["help_text", "parse_step", "run_steps", "step_help"]


def step_help(item: Technique) -> str:
    """The settings of a technique, one per line, for ``--step 'TECHNIQUE help'``."""
    lines = [f"{item.name}: {item.label}. {item.help}", "settings (name=value):"]
    for param in item.params:
        if param.form == "none":
            continue
        needed = "required" if param.required and param.default is None else f"default {param.default!r}"
        percent = "; a share, 0 to 1 or a percentage such as 5%" if param.percent else ""
        what = param.constraint.describe()
        if item.name == "generalize" and param.name == "rule":
            what = "BUILDER:PARAMETER, e.g. intervals:5,10,20 or dates:month,year"
        lines.append(f"  {param.name}: {param.label} ({what}{percent}; {needed}). {param.help}".rstrip())
    return "\n".join(lines)


def parse_step(text: str) -> tuple[Technique, dict[str, Any]]:
    """The technique and the (unchecked) settings of one ``--step`` argument."""
    try:
        parts = shlex.split(text)
    except ValueError as exc:
        raise ParameterError(f"--step {text[:60]!r}: {exc}.") from None
    if not parts:
        raise ParameterError("--step needs a technique, e.g. --step 'record_suppression k=5'.")
    item = technique(parts[0])
    given = parse_settings(item, parts[1:])
    # A required setting with a default (k, the suppression limit, the noise ...) may be left out on the command line.
    settings = {p.name: p.default for p in item.params if p.required and p.default is not None} | given
    if item.name == "generalize" and isinstance(settings.get("rule"), str):
        builder, _, parameter = settings["rule"].partition(":")
        settings["rule"] = rule_from_text(builder.strip(), parameter)
    if isinstance(settings.get("release"), str):
        try:
            settings["release"] = json.loads(settings["release"])
        except json.JSONDecodeError:
            raise ParameterError(
                f"--step {item.name}: release must be a JSON object, e.g. release='{{\"global_risk\": 0.002}}'."
            ) from None
    return item, settings


def help_text(args: argparse.Namespace) -> str | None:
    """The settings of the technique of a ``--step 'TECHNIQUE help'``, or None when no step asks for them."""
    for text in args.step or ():
        words = text.split()
        if words[1:2] == ["help"]:
            return step_help(technique(words[0]))
    return None


def run_steps(args: argparse.Namespace, data: pd.DataFrame) -> int:
    """Apply the ``--step`` techniques to ``data`` (FILE) in order; write ``-o`` and ``--save-recipe``."""
    parsed = [parse_step(text) for text in args.step]
    qis = split_columns(args.qi)
    sensitive = split_columns(args.sensitive)
    roles = dict.fromkeys(qis, ColumnRole.QUASI_IDENTIFIER) | dict.fromkeys(sensitive, ColumnRole.SENSITIVE)
    unknown = [name for name in roles if name not in data.columns]
    if unknown:
        raise ParameterError(f"--qi / --sensitive name column(s) FILE lacks: {', '.join(unknown)}.")
    contract = suggest_contract(data).with_roles(
        {name: roles.get(str(name), ColumnRole.INSENSITIVE) for name in data.columns}
    )
    key = Settings.from_env().pseudonym_key
    current = data
    results: list[TransformResult] = []
    words: list[str] = []
    limits: list[float] = []
    for number, (item, settings) in enumerate(parsed, start=1):
        if item.section == "steps":
            spec = check_spec({"kind": item.name, **settings})
            run = run_fixes(current, contract, MissingPolicy.VALUE, [spec], key=key)
            if run.error is not None:
                raise ParameterError(f"--step {number} ({item.name}): {run.error}")
            result = run.results[0]
            words.append(describe_result(spec, result))
            if "max_suppression" in spec:
                limits.append(float(spec["max_suppression"]))
            contract = run.contract
        else:
            checked = check_settings(item, settings)
            if item.name == "shuffling" and not checked.get("quasi_identifiers"):
                checked["quasi_identifiers"] = qis
            result = apply_step(current, Step(item.name, {k: v for k, v in checked.items() if v is not None}))
            words.append("")
        results.append(result)
        current = result.data
    recipe = Recipe(tuple(r.step for r in results), max_suppression=min(sum(limits), 1.0) if limits else None)
    if args.output is not None:
        write_table(current, args.output, overwrite_protect=[args.file], escape_formulas=args.escape_formulas)
    if args.save_recipe is not None:
        recipe.save(args.save_recipe)
    steps = [
        {"kind": r.step.kind, "rows_in": len(before), "rows_out": len(r.data), "done": text}
        for r, before, text in zip(results, [data, *(r.data for r in results[:-1])], words, strict=True)
    ]
    if args.json:
        print_json(
            {
                "rows_in": len(data),
                "rows_out": len(current),
                "steps": steps,
                "recipe": recipe.to_dict(),
                "output": str(args.output) if args.output is not None else None,
            }
        )
        return 0
    print(f"Applied {len(results)} step(s) to {args.file}: {len(data):,} rows in, {len(current):,} out.")
    rows = [[s["kind"], s["rows_in"], s["rows_out"], s["done"]] for s in steps]
    print(format_table(["step", "rows in", "rows out", "done"], rows, align="lrrl"))
    if args.output is not None:
        print(f"Wrote {len(current):,} rows to {args.output}.")
    else:
        print("No output written (use -o OUT).", file=sys.stderr)
    return 0
