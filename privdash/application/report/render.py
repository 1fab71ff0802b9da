"""The release report as one self-contained HTML file and as a PDF of the same page.

:func:`render_html` fills the template of :mod:`privdash.application.report.template` with the report's numbers,
formatted as the dashboard formats them (:mod:`privdash.application.formats`), and its charts drawn by matplotlib
as inline SVG (text kept as text, no external reference). :func:`render_pdf` lays the same page out on A4 with
WeasyPrint; it fetches nothing (any address in the page would be refused), so the PDF shows what the HTML file
shows. :func:`write_report` picks the format from the file's extension and writes the file atomically.
"""

from __future__ import annotations

import base64
import functools
import io
import math
import os
import re
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd

from privdash.application.estimates import printable_rows
from privdash.application.formats import fmt_count, fmt_number, fmt_share, in_people
from privdash.application.project import DECISION_LABELS, SIGNOFF_FIELDS
from privdash.application.report.definitions import describe_targets
from privdash.application.report.model import PostcodeUnits, ReleaseReport
from privdash.application.report.synthetic import synthetic_html
from privdash.application.report.template import STYLE, TEMPLATE
from privdash.application.riskview import household_rows
from privdash.errors import ParameterError, PrivdashError
from privdash.measure.diagnose import Diagnosis
from privdash.utility.estimates import EstimateComparison

__all__ = [
    "FORMATS",
    "load_renderers",
    "render_html",
    "render_pdf",
    "report_context",
    "report_format",
    "write_report",
]

#: Output formats by file extension.
FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf"}

# The dashboard's colours (dashboard.ui.theme.COLORS): primary blue, dark crimson for what fails, muted grey.
_PRIMARY, _DANGER, _MUTED, _GRID = "#1864ab", "#70002a", "#5c636a", "#e9ecef"

#: The name of the condensed recipe attached to the report (a data: link in the HTML file, an attachment of the PDF).
RECIPE_FILE = "recipe-condensed.json"

#: The heading of the person-key column of the class table (the key as text: each tuple of the class's people).
PERSON_KEY_LABEL = "QI tuples of each person of the class"

_ENVIRONMENT = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def report_format(path: str | os.PathLike[str]) -> str:
    """``"html"`` or ``"pdf"`` from the extension of ``path``; :class:`ParameterError` for any other."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ParameterError(
            f"Cannot tell the report format from '{Path(path).name}': name the output .pdf, .html or .htm."
        )
    return FORMATS[suffix]


# --- charts --------------------------------------------------------------------------------------------------------


def _svg(name: str, draw: Any, *, width: float = 4.2, height: float = 2.4) -> str:
    """An SVG chart ``name`` drawn by ``draw(axes)``: text as text in the page's font, ids fixed so that the same report
    gives the same file, no metadata block, no XML prolog or doctype (it is inlined in HTML)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    settings: Any = {
        "svg.fonttype": "none",
        "svg.hashsalt": "privdash-report",
        "font.family": "DejaVu Sans",
        "font.size": 7.5,
        "axes.edgecolor": _MUTED,
        "axes.labelcolor": "#1f2328",
        "xtick.color": _MUTED,
        "ytick.color": _MUTED,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
    with rc_context(settings):
        figure = Figure(figsize=(width, height), layout="constrained")
        axes = figure.add_subplot()
        axes.grid(axis="y", color=_GRID, linewidth=0.6)
        axes.set_axisbelow(True)
        draw(axes)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buffer.getvalue()
    return _own_ids(text[text.index("<svg") :], name)


#: The charts already drawn for a report (its HTML and its PDF show the same charts: drawn once for both).
_CHARTS: weakref.WeakKeyDictionary[ReleaseReport, dict[str, Any]] = weakref.WeakKeyDictionary()


def _chart(report: ReleaseReport, key: str, draw: Callable[[], Any]) -> Any:
    """The chart ``key`` of ``report``, drawn by ``draw()`` the first time it is asked for (a report is immutable, so
    its charts are too)."""
    charts = _CHARTS.setdefault(report, {})
    if key not in charts:
        charts[key] = draw()
    return charts[key]


def _own_ids(svg: str, prefix: str) -> str:
    """The SVG with its element ids (and the references to them) prefixed: matplotlib numbers the ids of every
    figure alike, and ids must be unique in the page that holds several charts."""
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    return re.sub(r'(url\(#|href="#)([^")]+)', lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def histogram_svg(bins: pd.DataFrame, k: int) -> str:
    """Classes per class-size bin; bins below the target k dark crimson and hatched (colour is not the only cue)."""

    def draw(axes: Any) -> None:
        below = bins["low"].to_numpy() < k
        positions = np.arange(len(bins))
        bars = axes.bar(positions, bins["classes"], color=np.where(below, _DANGER, _PRIMARY), width=0.75)
        for bar, flag in zip(bars, below, strict=True):
            if flag:
                bar.set_hatch("////")
                bar.set_edgecolor("white")
        axes.set_xticks(positions, bins["label"], rotation=45, ha="right")
        axes.set_xlabel("class size")
        axes.set_ylabel("classes")

    return _svg("histogram", draw)


def risk_curve_svg(report: ReleaseReport) -> str:
    """Share of the records whose prosecutor risk is above each threshold tau (a step curve), with the report's
    threshold dashed."""
    curve = report.risk_curve
    tau = report.diagnosis.risk.max_risk

    def draw(axes: Any) -> None:
        x = np.append(curve.x, 1.0)
        y = 100 * np.append(curve.fraction, curve.fraction[-1] if len(curve.fraction) else 0.0)
        axes.step(x, y, where="post", color=_PRIMARY, linewidth=1.4)
        axes.axvline(tau, color=_DANGER, linestyle="--", linewidth=1)
        axes.annotate(f"tau = {tau:g}", (tau, 96), xytext=(4, 0), textcoords="offset points", color=_DANGER)
        axes.set_xlim(0, 1)
        axes.set_ylim(0, 100)
        axes.set_xlabel("risk threshold tau")
        axes.set_ylabel(f"{report.unit} with risk > tau (%)")

    return _svg("risk-curve", draw, width=6.4, height=2.3)


def contributions_svg(contributions: pd.DataFrame) -> str:
    """Unique records lost when each quasi-identifier is left out, largest first."""
    ordered = contributions.iloc[::-1]

    def draw(axes: Any) -> None:
        axes.grid(axis="x", color=_GRID, linewidth=0.6)
        axes.grid(axis="y", visible=False)
        axes.barh(ordered["quasi_identifier"].astype(str), ordered["uniques_drop"], color=_PRIMARY, height=0.7)
        axes.set_xlabel("fewer unique records")

    return _svg("contributions", draw, height=max(1.6, 0.28 * len(ordered) + 0.8))


# --- the template's context ----------------------------------------------------------------------------------------


def postcode_map_svg(units: PostcodeUnits) -> str | None:
    """The named postcode units on a map (postcode areas as grey outlines behind): under the census threshold dark
    crimson and hatched, passing blue, without a census population grey. None when there are no polygons."""
    shapes = units.mapped
    if shapes is None or not len(shapes):
        return None

    from matplotlib.patches import Patch

    def draw(axes: Any) -> None:
        axes.grid(False)
        axes.set_axis_off()
        # Keep the map about the units (with a margin), not the whole country when they are in one region.
        west, south, east, north = shapes.total_bounds
        pad = max(east - west, north - south) * 0.08 + 0.05
        if units.outline is not None:
            units.outline.plot(ax=axes, facecolor="none", edgecolor="#adb5bd", linewidth=0.3)
        status = shapes["fails"].astype("object")
        styles = (
            (status.isna(), "#ced4da", None, "no census population"),
            (status.eq(True), _DANGER, "////", "under the threshold"),
            (status.eq(False), _PRIMARY, None, "passes"),
        )
        for mask, colour, hatch, label in styles:
            chosen = shapes[mask.to_numpy(dtype=bool)]
            if len(chosen):
                chosen.plot(ax=axes, color=colour, hatch=hatch, edgecolor="white", linewidth=0.2, label=label)
        axes.set_xlim(west - pad, east + pad)
        axes.set_ylim(south - pad, north + pad)
        axes.set_aspect(1 / np.cos(np.radians((south + north) / 2)))  # degrees of longitude shrink northwards
        handles = [
            Patch(facecolor=colour, hatch=hatch, edgecolor="white", label=label)
            for mask, colour, hatch, label in styles
            if mask.any()
        ]
        axes.legend(handles=handles, loc="upper left", frameon=False, fontsize=6.5)  # over the sea west of Scotland

    return _svg(f"map-{re.sub(r'[^A-Za-z0-9]', '', units.column) or 'postcode'}", draw, width=4.6, height=4.2)


def _value(value: Any) -> str:
    """A table cell: missing values as ``(missing)``, as the classes name them."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "(missing)"
    return str(value)


def _share(part: float, whole: float) -> str:
    return fmt_share(part / whole) if whole else "-"


def _risk(value: float) -> str:
    return fmt_share(value, 2)


def _attackers(diagnosis: Diagnosis) -> list[dict[str, str]]:
    n = diagnosis.n_records
    return [
        {
            "model": model.model,
            "highest": _risk(model.highest) if model.model != "marketer" else "-",
            "average": _risk(model.average),
            "lowest": _risk(model.lowest) if model.model != "marketer" else "-",
            "at_risk": f"{fmt_count(model.n_records_at_risk)} ({_share(model.n_records_at_risk, n)})"
            if model.model != "marketer"
            else "-",
        }
        for model in diagnosis.risk.models
    ]


def _uniqueness(diagnosis: Diagnosis) -> list[dict[str, str]]:
    uniqueness = diagnosis.population_uniqueness
    if uniqueness is None:
        return []
    rows = []
    for name, estimate in (
        ("Pitman", uniqueness.pitman),
        ("Zayatz", uniqueness.zayatz),
        ("SNB", uniqueness.snb),
        (f"Dankar et al. ({uniqueness.dankar.model.value})", uniqueness.dankar),
    ):
        rows.append(
            {
                "name": name,
                "uniques": fmt_number(estimate.uniques, 0) if estimate.valid else "-",
                "share": fmt_share(estimate.fraction, 3) if estimate.valid else "-",
                "valid": "yes" if estimate.valid else "no",
            }
        )
    return rows


def _household(report: ReleaseReport) -> dict[str, Any] | None:
    """The household-risk table: one row per quantity, the released table's value and, after a fix, the input's."""
    after = household_rows(report.diagnosis)
    if after is None:
        return None
    before = household_rows(report.fix.before) if report.fix is not None else None
    earlier = dict(before or [])
    rows = [{"quantity": name, "after": value, "before": earlier.get(name, "-")} for name, value in after]
    weighted = report.diagnosis.household_risk is not None and report.diagnosis.household_risk.weighted
    return {
        "column": report.diagnosis.household,
        "rows": rows,
        "with_before": before is not None,
        "member": "sdcMicro's individual risk with the sampling weights" if weighted else "1 / f (no sampling weights)",
    }


def _model_rows(report: ReleaseReport) -> list[dict[str, Any]]:
    targets = report.targets
    out = []
    for name, models in report.diagnosis.sensitive_models.items():
        summary = models.summary()
        alpha = summary["alpha_k"]
        rows = [
            ("distinct l-diversity", fmt_number(summary["l_distinct"]), f"l ≥ {targets.l}" if targets.l else ""),
            ("entropy l-diversity (exp H, natural log)", fmt_number(summary["l_entropy"]), ""),
            (
                f"recursive (c,{summary['recursive_l']})-diversity: smallest integer c",
                fmt_number(summary["recursive_c"]),
                "",
            ),
            (
                f"t-closeness ({summary['t_distance']} distance)",
                fmt_number(summary["t_closeness"], 4),
                f"t ≤ {targets.t:g}" if targets.t is not None else "",
            ),
            (f"delta-disclosure (log base {summary['delta_base']:g})", fmt_number(summary["delta_disclosure"], 4), ""),
            ("basic beta-likeness", fmt_number(summary["beta_basic"], 4), ""),
            ("enhanced beta-likeness", fmt_number(summary["beta_enhanced"], 4), ""),
            (f"(alpha,k)-anonymity: alpha (k = {alpha['k']})", fmt_number(alpha["alpha"], 4), ""),
        ]
        out.append({"name": name, "rows": [{"model": m, "value": v, "target": t} for m, v, t in rows]})
    return out


def _model_risk(report: ReleaseReport) -> list[dict[str, str]]:
    """The model-based risk of the released table and, after a fix, of the input (``before``)."""
    before = report.fix.before.model_risk if report.fix is not None else {}
    rows = []
    for method, model in report.diagnosis.model_risk.items():
        earlier = before.get(method)
        rows.append(
            {
                "method": method,
                "model": model.model,
                "risk1": fmt_share(model.risk1, 2),
                "risk2": fmt_share(model.risk2, 2),
                "risk1_before": fmt_share(earlier.risk1, 2) if earlier is not None else "-",
                "risk2_before": fmt_share(earlier.risk2, 2) if earlier is not None else "-",
            }
        )
    return rows


def targets_text(report: ReleaseReport) -> str:
    """The report's targets in words, each saying what it applies to (:func:`describe_targets`): l and t on the
    sensitive attributes the diagnosis measured, t with the distance it measured on each."""
    models = report.diagnosis.sensitive_models
    distances = {name: str(model.summary()["t_distance"]) for name, model in models.items()}
    return describe_targets(report.targets, list(models), distances)


def _combinations(report: ReleaseReport) -> dict[str, Any] | None:
    risk, msus = report.combinations, report.msus
    if risk is None or msus is None:
        return None
    contributions = risk.qi_contributions
    by_size = msus.counts_by_size()
    by_size = by_size[by_size["records"] > 0]
    where = "the table before the fix" if report.fix is not None else "the table"
    after = (
        f" In the released table {fmt_count(report.diagnosis.sample_uniques)} records are unique."
        if report.fix is not None
        else ""
    )
    summary = (
        f"In {where}, {fmt_count(msus.n_unique)} of {fmt_count(msus.n_records)} records are unique on all "
        f"{len(risk.quasi_identifiers)} quasi-identifiers; every subset of them was grouped on its own. Only "
        f"attribute names are shown here, no values.{after}"
    )
    top = report.top_combinations()
    return {
        "summary": summary,
        "contributions": [
            {"name": str(name), "drop": fmt_count(drop), "share": fmt_share(share)}
            for name, drop, share in zip(
                contributions["quasi_identifier"],
                contributions["uniques_drop"],
                contributions["uniques_drop_share"].fillna(0.0),
                strict=True,
            )
        ],
        "msu_sizes": [
            {"size": int(size), "records": fmt_count(records)}
            for size, records in zip(by_size["size"], by_size["records"], strict=True)
        ],
        "top": [
            {
                "qis": ", ".join(map(str, row["quasi_identifiers"])),
                "uniques": fmt_count(row["sample_uniques"]),
                "below": fmt_count(row["records_below_k"]),
                "k": fmt_count(row["k"]),
                "classes": fmt_count(row["classes"]),
                "distinction": fmt_number(row["distinction"], 3),
                "separation": fmt_number(row["separation"], 3),
            }
            for row in top.to_dict("records")
        ],
        "note": report.combinations_note,
    }


def _postcodes(report: ReleaseReport) -> list[dict[str, Any]]:
    out = []
    for units in report.postcodes:
        source = units.source or "no census population table was found"
        summary = (
            f"{fmt_count(units.n_units)} units in the released table; census populations from {source}; "
            f"{fmt_count(units.failing)} units hold fewer people than the threshold of "
            f"{fmt_count(units.threshold)}."
        )
        notes = []
        if units.more:
            notes.append(f"{fmt_count(units.more)} more units with larger populations are not listed.")
        if units.withheld_units:
            notes.append(
                f"{fmt_count(units.withheld_units)} units ({fmt_count(units.withheld_records)} records) have records "
                f"only in classes smaller than {report.threshold}: they are counted here, not named."
            )
        if units.missing_records:
            notes.append(f"{fmt_count(units.missing_records)} records have no postcode.")
        rows = [
            {
                "code": str(code),
                "level": str(level),
                "records": fmt_count(records),
                "population": fmt_count(population) if not math.isnan(population) else "not in the census table",
                "fails": bool(fails) if fails is not pd.NA else False,
                "status": "-" if fails is pd.NA else ("under the threshold" if fails else "passes"),
            }
            for code, level, records, population, fails in zip(
                units.units["code"],
                units.units["level"],
                units.units["records"],
                units.units["population"],
                units.units["fails"],
                strict=True,
            )
        ]
        out.append(
            {
                "column": units.column,
                "map": _chart(report, f"map {units.column}", functools.partial(postcode_map_svg, units)),
                "summary": summary,
                "rows": rows,
                "threshold": fmt_count(units.threshold),
                "notes": notes,
            }
        )
    return out


def _comparison(before: Diagnosis, after: Diagnosis, report: ReleaseReport) -> list[tuple[str, str, str]]:
    fix = report.fix
    assert fix is not None

    def both(value: Any) -> tuple[str, str]:
        return value(before), value(after)

    unit = report.unit
    rows = [
        (unit, *both(lambda d: fmt_count(d.n_records))),
        ("equivalence classes", *both(lambda d: fmt_count(d.classes.n_classes))),
        ("k (smallest class)", *both(lambda d: fmt_count(d.k))),
        (
            "sample uniques",
            *both(lambda d: f"{fmt_count(d.sample_uniques)} ({_share(d.sample_uniques, d.n_records)})"),
        ),
        (
            f"{unit} below k = {report.targets.k}",
            *both(lambda d: fmt_count(d.classes.records_below(report.targets.k))),
        ),
        (
            f"{unit} at risk (fail a target)",
            fmt_count(fix.before_verdict.records_at_risk),
            fmt_count(report.verdict.records_at_risk),
        ),
        ("highest prosecutor risk", *both(lambda d: _risk(d.risk.prosecutor.highest))),
        ("average prosecutor risk", *both(lambda d: _risk(d.risk.prosecutor.average))),
        ("highest journalist risk", *both(lambda d: _risk(d.risk.journalist.highest))),
        ("marketer risk", *both(lambda d: _risk(d.risk.marketer.average))),
        ("verdict", fix.before_verdict.status.upper(), report.verdict.status.upper()),
    ]
    if fix.people_in is not None and fix.people_out is not None:
        rows.insert(1, ("rows", fmt_count(fix.rows_in), fmt_count(fix.rows_out)))
    for name in after.sensitive_models:
        if name in before.sensitive_models:
            rows.append(
                (
                    f"distinct l-diversity ({name})",
                    fmt_number(before.sensitive_models[name].l_distinct.value),
                    fmt_number(after.sensitive_models[name].l_distinct.value),
                )
            )
            rows.append(
                (
                    f"t-closeness ({name})",
                    fmt_number(before.sensitive_models[name].t_closeness.value, 4),
                    fmt_number(after.sensitive_models[name].t_closeness.value, 4),
                )
            )
    return rows


def _fix(report: ReleaseReport, number: int) -> dict[str, Any] | None:
    fix = report.fix
    if fix is None:
        return None
    loss = []
    if fix.loss_before is not None and fix.loss_after is not None:
        for name, before, after in (
            ("loss (granularity, 0..1)", fix.loss_before.loss, fix.loss_after.loss),
            ("precision (generalization intensity, 0..1)", fix.loss_before.precision, fix.loss_after.precision),
            ("discernibility", fix.loss_before.discernibility, fix.loss_after.discernibility),
            ("aecs (average class size)", fix.loss_before.aecs, fix.loss_after.aecs),
            ("non-uniform entropy (bits)", fix.loss_before.entropy, fix.loss_after.entropy),
        ):
            loss.append((name, fmt_number(before, 4), fmt_number(after, 4)))
        loss.append(
            (
                "rows suppressed" if fix.people_in is not None else "records suppressed",
                fmt_count(fix.loss_before.suppressed),
                f"{fmt_count(fix.loss_after.suppressed)} ({_share(fix.loss_after.suppressed, fix.rows_in)})",
            )
        )
    return {
        "number": number,
        "description": fix.description,
        "steps": list(fix.steps),
        "comparison": _comparison(fix.before, report.diagnosis, report),
        "columns": [
            {
                "column": row["column"],
                "change": row["change"],
                "before": fmt_count(row["distinct_before"]),
                "after": fmt_count(row["distinct_after"]),
                "changed": f"{fmt_count(row['cells_changed'])} ({fmt_share(row['share_changed'])})",
                "examples": row["examples"],
            }
            for row in fix.columns.to_dict("records")
        ],
        "loss": loss,
        "loss_note": fix.loss_note,
        "estimates": _estimate_rows(fix.estimates, report.threshold),
        "estimates_notes": list(dict.fromkeys(note for comparison in fix.estimates for note in comparison.notes)),
        "estimates_note": fix.estimates_note,
        "recipe_json": fix.recipe_json,
        "recipe_sha256": fix.recipe_sha256,
        "recipe_steps": [
            {"number": number, "technique": technique, "columns": columns, "parameters": parameters}
            for number, (technique, columns, parameters) in enumerate(fix.recipe_steps, start=1)
        ],
        "recipe_limit": fmt_share(fix.recipe.max_suppression) if fix.recipe.max_suppression is not None else None,
        "recipe_file": RECIPE_FILE,
        "recipe_data": "data:application/json;base64,"
        + base64.b64encode((fix.recipe_json + "\n").encode("utf-8")).decode("ascii"),
    }


def _estimate_rows(comparisons: Sequence[EstimateComparison], threshold: int) -> dict[str, Any]:
    """The estimates' rows for the table, and how many are withheld (:func:`printable_rows`)."""
    rows, withheld = printable_rows(comparisons, threshold)
    level = f"{comparisons[0].level:.0%}" if comparisons else "95%"
    weights = comparisons[0].weights if comparisons else None
    return {"rows": rows, "withheld": withheld, "level": level, "weights": weights}


def _glance(report: ReleaseReport) -> list[tuple[str, str]]:
    """The released table's key numbers, for the first page."""
    diagnosis = report.diagnosis
    n = diagnosis.n_records
    prosecutor = diagnosis.risk.prosecutor
    unit = report.unit
    rows = [(unit, fmt_count(n))]
    if diagnosis.entity is not None:
        rows.append(("rows", fmt_count(diagnosis.rows - diagnosis.entity_rows_dropped)))
    rows += [
        ("equivalence classes", fmt_count(diagnosis.classes.n_classes)),
        ("k (smallest class)", fmt_count(diagnosis.k)),
        ("sample uniques", f"{fmt_count(diagnosis.sample_uniques)} ({_share(diagnosis.sample_uniques, n)})"),
        (f"{unit} at risk (fail a target)", fmt_count(report.verdict.records_at_risk)),
        ("highest prosecutor risk", _risk(prosecutor.highest)),
        ("average prosecutor risk", _risk(prosecutor.average)),
        ("marketer risk", _risk(diagnosis.risk.marketer.average)),
    ]
    fix = report.fix
    if fix is not None and fix.people_in is not None and fix.people_out is not None:
        rows.append(("people suppressed by the fix", fmt_count(fix.people_in - fix.people_out)))
        rows.append(("rows suppressed by the fix", fmt_count(fix.rows_in - fix.rows_out)))
    elif fix is not None:
        rows.append(("records suppressed by the fix", fmt_count(fix.rows_in - fix.rows_out)))
        rows.append(("information loss (loss, 0..1)", fmt_number(fix.loss_after.loss, 4) if fix.loss_after else "-"))
    return rows


def _notice(report: ReleaseReport) -> str:
    shown = report.threshold
    notice = (
        f"This report never prints the quasi-identifier values of an equivalence class smaller than "
        f"{shown} records{' (the target k)' if shown == report.targets.k else ''}: such values would point at the "
        "few people who have them. Classes are listed with their values only when they hold at least "
        f"{shown} records of the released table; smaller classes are counted, and a value is shown only when a "
        f"record having it is in a class of at least {shown} records. This release has "
        f"{fmt_count(report.withheld_classes)} smaller classes ({fmt_count(report.withheld_records)} records)."
    )
    return in_people(notice) if report.diagnosis.entity is not None else notice


def report_context(report: ReleaseReport, *, pdf: bool) -> dict[str, Any]:
    """The template's values: every number formatted, the charts as SVG text."""
    diagnosis = report.diagnosis
    verdict = report.verdict
    n = diagnosis.n_records
    fingerprint = report.fingerprint
    fingerprint_rows = [
        ("file" if fingerprint.size_bytes is not None else "dataset", fingerprint.name),
        ("SHA-256 of the table", fingerprint.sha256),
        ("which is the SHA-256 of", fingerprint.hashed),
    ]
    if fingerprint.file_sha256 is not None:
        fingerprint_rows.append(("SHA-256 of the file's bytes", fingerprint.file_sha256))
    if fingerprint.size_bytes is not None:
        fingerprint_rows.append(("size", f"{fmt_count(fingerprint.size_bytes)} bytes"))
    fingerprint_rows += [("rows", fmt_count(fingerprint.rows)), ("columns", fmt_count(fingerprint.columns))]
    if fingerprint.modified:
        fingerprint_rows.append(("file modified", fingerprint.modified))
    fingerprint_rows.append(("report made", fingerprint.created))
    if report.fix is not None:
        kept = sum(column.released != "dropped" for column in report.columns)
        fingerprint_rows.append(("released table (after the fix)", f"{fmt_count(diagnosis.rows)} rows, {kept} columns"))
    qis = list(diagnosis.quasi_identifiers)
    unit = report.unit
    people = diagnosis.entity is not None
    said = in_people if people else str
    shown = report.shown_classes
    shown_columns = [name for name in shown.columns if name != "size"] if len(shown.columns) else qis
    bins = report.size_bins
    number = 8 + (1 if report.postcodes else 0)
    fix = _fix(report, number)
    synthetic_number = number + (1 if fix else 0)
    definitions_number = synthetic_number + (1 if report.synthetic is not None else 0)
    individual = diagnosis.individual_risk
    targets = targets_text(report)
    return {
        "style": STYLE,
        "pdf": pdf,
        "title": report.title,
        "version": report.version,
        "fingerprint": {"rows": fingerprint_rows, "created": fingerprint.created, "sha256": fingerprint.sha256},
        "verdict": {
            "status": verdict.status,
            "label": "PASS: meets every target" if verdict.passed else "FAIL: not safe to release",
            "sentence": said(verdict.sentence()),
        },
        "targets": targets,
        "tau": f"{diagnosis.risk.max_risk:g}",
        "k": report.targets.k,
        "threshold": report.threshold,
        "checks": [
            {
                "target": check.target + (f" ({check.attribute})" if check.attribute else ""),
                "required": f"{check.required:g}",
                "achieved": "-" if math.isnan(check.achieved) else f"{check.achieved:.4g}",
                "status": "pass" if check.passed else "fail",
                "failing": fmt_count(check.records_failing),
                "reason": said(check.reason) if check.reason else check.reason,
            }
            for check in verdict.checks
        ],
        "before_verdict": said(report.fix.before_verdict.sentence()) if report.fix is not None else None,
        "unit": unit,
        "people": report.people,
        "left_out": list(report.left_out),
        "glance": _glance(report),
        "notice": _notice(report),
        "columns": report.columns,
        "missing": {
            "policy": report.missing_policy.value,
            "rule": report.missing_rule,
            "effect": report.missing_effect,
        },
        "warnings": list(diagnosis.warnings),
        "classes": {
            "summary": (
                f"{fmt_count(n)} {unit} of the released table in {fmt_count(diagnosis.classes.n_classes)} classes "
                f"over {len(qis)} quasi-identifiers ({', '.join(qis)}); k = {fmt_count(diagnosis.k)}; "
                f"{fmt_count(diagnosis.sample_uniques)} sample uniques ({_share(diagnosis.sample_uniques, n)})."
            ),
            "sizes": [
                {
                    "label": label,
                    "classes": fmt_count(classes),
                    "records": fmt_count(records),
                    "share": _share(records, n),
                    "below": low < report.targets.k and classes > 0,
                }
                for label, low, classes, records in zip(
                    bins["label"], bins["low"], bins["classes"], bins["records"], strict=True
                )
            ],
            # with a person id the one key column is the person key (the class's QI tuples as text)
            "shown_columns": [PERSON_KEY_LABEL] if people else shown_columns,
            "shown_rows": [
                {"cells": [_value(row[name]) for name in shown_columns], "size": fmt_count(row["size"])}
                for row in shown.to_dict("records")
            ],
            "withheld": (
                f"{fmt_count(report.withheld_classes)} classes smaller than {report.threshold} "
                f"({fmt_count(report.withheld_records)} {unit}) are counted, never listed."
            ),
        },
        "risk": {
            "attackers": _attackers(diagnosis),
            "population": diagnosis.population.source,
            "uniqueness": _uniqueness(diagnosis),
            "individual": (
                f"expected re-identifications {fmt_number(individual.expected_reidentifications, 1)}, "
                f"global risk {fmt_share(individual.global_risk, 3)}"
                if individual is not None
                else None
            ),
            "household": _household(report),
            "model_risk": _model_risk(report),
            "model_risk_before": report.fix is not None and bool(report.fix.before.model_risk),
            "below_k": [
                {"k": k, "records": fmt_count(records), "share": _share(records, n)}
                for k, records in diagnosis.records_below_k().items()
                if k <= max(10, report.targets.k)
            ],
        },
        "models": _model_rows(report),
        "combinations": _combinations(report),
        "combinations_note": report.combinations_note,
        "postcodes": _postcodes(report),
        "fix": fix,
        "synthetic": synthetic_html(report.synthetic, synthetic_number, threshold=report.threshold),
        "definitions": report.definitions,
        "definitions_number": definitions_number,
        "signoff_number": definitions_number + 1,
        "signoff": {name: report.signoff.get(name, "") for name in SIGNOFF_FIELDS},
        "decisions": tuple(DECISION_LABELS.items()),
        # the callers' targets line names no sensitive attribute when the targets do not: the report's words do
        "parameters": [(name, targets if name == "targets" else value) for name, value in report.parameters],
        "charts": {
            "histogram": _chart(report, "histogram", lambda: histogram_svg(bins, report.targets.k)),
            "curve": _chart(report, "curve", lambda: risk_curve_svg(report)),
            "contributions": _chart(
                report, "contributions", functools.partial(contributions_svg, report.combinations.qi_contributions)
            )
            if report.combinations is not None
            else "",
        },
    }


# --- output ------------------------------------------------------------------------------------------------------


def render_html(report: ReleaseReport, *, pdf: bool = False) -> str:
    """The report as one self-contained HTML page (``pdf``: the variant laid out for print, with lines to sign on
    instead of form fields)."""
    return _ENVIRONMENT.from_string(TEMPLATE).render(report_context(report, pdf=pdf))


def _no_fetch(url: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """WeasyPrint's URL fetcher: the page is self-contained, so any address is refused."""
    raise ValueError(f"The release report does not load external resources (asked for {url[:80]}).")


def _fetcher() -> Any:
    """The URL fetcher of the PDF, which fetches nothing: WeasyPrint 70's fetcher class allowed no protocol, or
    :func:`_no_fetch` before."""
    import weasyprint

    fetcher = getattr(weasyprint, "URLFetcher", None)
    return fetcher(allowed_protocols=()) if fetcher is not None else _no_fetch


def render_pdf(report: ReleaseReport) -> bytes:
    """The report as PDF (A4), from the print variant of the HTML page; with a fix, the condensed recipe is attached
    to the PDF as :data:`RECIPE_FILE`."""
    import weasyprint

    document = weasyprint.HTML(string=render_html(report, pdf=True), url_fetcher=_fetcher())
    attachments = []
    if report.fix is not None:
        attachments.append(
            weasyprint.Attachment(
                string=report.fix.recipe_json + "\n",
                name=RECIPE_FILE,
                description="The fix's recipe, condensed (hierarchy tables by their size, seeds withheld)",
                url_fetcher=_fetcher(),
            )
        )
    pdf = document.write_pdf(attachments=attachments)
    assert pdf is not None
    return bytes(pdf)


def load_renderers() -> bool:
    """Load what drawing the charts and laying out the PDF take, ahead of any report: matplotlib's figure and SVG
    backend, WeasyPrint (its C libraries, its default stylesheets) and the page's fonts, by drawing a small chart and
    laying out a line of the page. The dashboard's fork server calls it once, so that every Report job forked from
    it starts with them (Adult's report: 0.6 s of CPU less a job). Best effort: False when a library cannot load
    here; a report that needs it then says why."""
    try:
        import weasyprint

        _svg("warm-up", lambda axes: axes.bar([0, 1], [1, 2]))
        weasyprint.HTML(
            string=f"<style>{STYLE}</style><h1>privdash</h1><p>report <span class='hash'>0</span></p>",
            url_fetcher=_fetcher(),
        ).render()
    except Exception:  # any failure here is the report's to state, with its context
        return False
    return True


def render(report: ReleaseReport, kind: str) -> bytes:
    """The report in format ``kind`` (``"html"`` or ``"pdf"``) as bytes."""
    if kind == "pdf":
        return render_pdf(report)
    if kind == "html":
        return render_html(report).encode("utf-8")
    raise ParameterError(f"Unknown report format {kind!r}; use html or pdf.")


def write_report(
    report: ReleaseReport, path: str | os.PathLike[str], *, protect: Sequence[str | os.PathLike[str]] = ()
) -> tuple[Path, float]:
    """Write the report to ``path`` in the format of its extension, never over a path of ``protect`` (the
    inputs); the file appears whole or not at all. Returns the path and the seconds rendering took."""
    target = Path(path)
    kind = report_format(target)
    for source in protect:
        if target.exists() and Path(source).exists() and target.resolve() == Path(source).resolve():
            raise ParameterError(f"Refusing to overwrite the input file {source}; choose another output path.")
    if not target.parent.is_dir():
        raise PrivdashError(f"Cannot write the report: the folder {target.parent} does not exist.")
    started = time.perf_counter()
    content = render(report, kind)
    seconds = time.perf_counter() - started
    temp: str | None = None
    try:
        descriptor, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        # mkstemp makes the file owner-only; the report gets the permissions of any other file the user writes.
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(temp, 0o666 & ~mask)
        os.replace(temp, target)
    except OSError as exc:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
        raise PrivdashError(f"Cannot write the report {target}: {exc.strerror or exc}.") from exc
    return target, seconds


def render_files(report: ReleaseReport, stem: str) -> Mapping[str, tuple[str, bytes]]:
    """Both formats, as ``{format: (file name, content)}`` with names ``<stem>-report.html`` / ``.pdf``."""
    return {kind: (f"{stem}-report.{kind}", render(report, kind)) for kind in ("html", "pdf")}
