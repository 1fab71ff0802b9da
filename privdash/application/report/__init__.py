"""The release report: what a privacy officer reads before signing off a release, assembled in one object.

A :class:`ReleaseReport` is built by :func:`build_report` from a table, its data contract (roles and types), the
release targets and, optionally, the fix applied before release (:class:`AppliedFix`: a recipe re-applied,
:func:`recipe_fix`, or the least-lossy search, :func:`search_fix`). It holds the core's results, and the few
tables derived from them for display:

* the fingerprint of the input (:class:`Fingerprint`: name, SHA-256, rows, columns, dates);
* the *released table*'s diagnosis (the fixed table when there is a fix, else the input) and the core's verdict
  against the targets (:meth:`~privdash.measure.diagnose.Diagnosis.check`);
* with a fix, the diagnosis of the input, the steps, the recipe and the information loss (:class:`FixSummary`);
* the QI-combination analysis of the input: which attributes single people out;
* for each postcode quasi-identifier, its units with their census populations (:class:`PostcodeUnits`);
* the definitions of every number shown (:data:`DEFINITIONS`, worded as docs/definitions.md words them).

Values never shown
------------------
The report never prints a quasi-identifier value of an equivalence class smaller than the target k: next to the
other facts of the report, such a value points at the few people who have it. A list of classes shows only classes
of at least k records of the released table, with their values, and counts the smaller ones; a list of values (the
published values of a fix, postcode units) shows a value only when a record having it is in a class of at least k
records of the released table, and counts the others. A class of one record is never shown, even with the target
k = 1 (:func:`shown_threshold`). The hierarchies of a recipe are summarised, not printed, since their leaves list
original values (:func:`condensed_recipe`).

People with several rows
------------------------
When the contract marks a person id, every count is of people (the diagnosis with ``entity``): a class is a group of
people with equal keys, the rule above holds for classes of people (a class's key, its people's QI tuples, is shown
only for classes of at least k people), and the sections that count rows (the QI-combination analysis, postcode
units, the fix's estimates) are left out with the reason (:attr:`ReleaseReport.left_out`, ``combinations_note``).

:func:`report_for_state` builds the report of a dashboard view (its dataset, roles, targets and fix steps); the
finished files wait for their download in a disk cache (:class:`ReportFiles`). Rendering (HTML and PDF) is
:mod:`privdash.application.report.render`. Nothing here imports Dash.

Modules: :mod:`~privdash.application.report.model` (what a report holds), :mod:`~privdash.application.report.fix`
(the fix it describes), :mod:`~privdash.application.report.build` (the assembly),
:mod:`~privdash.application.report.definitions` (the definitions quoted from docs/definitions.md),
:mod:`~privdash.application.report.state` (the dashboard's report and its file cache),
:mod:`~privdash.application.report.render` and :mod:`~privdash.application.report.template` (the page). This
package gives their public names, each module imported on first use (PEP 562).
"""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.application.report.build import (
        build_report,
        condensed_recipe,
        printable_values,
        recipe_steps,
        shown_threshold,
    )
    from privdash.application.report.definitions import DEFINITIONS, PEOPLE_DEFINITION, Definition, describe_targets
    from privdash.application.report.fix import recipe_fix, search_fix
    from privdash.application.report.model import (
        AppliedFix,
        ColumnInfo,
        Fingerprint,
        FixSummary,
        PostcodeUnits,
        ReleaseReport,
        content_sha256,
        file_fingerprint,
        table_fingerprint,
    )
    from privdash.application.report.render import (
        FORMATS,
        render_html,
        render_pdf,
        report_context,
        report_format,
        write_report,
    )
    from privdash.application.report.state import ReportFiles, report_for_state

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "AppliedFix": "privdash.application.report.model",
    "build_report": "privdash.application.report.build",
    "ColumnInfo": "privdash.application.report.model",
    "condensed_recipe": "privdash.application.report.build",
    "content_sha256": "privdash.application.report.model",
    "Definition": "privdash.application.report.definitions",
    "DEFINITIONS": "privdash.application.report.definitions",
    "describe_targets": "privdash.application.report.definitions",
    "file_fingerprint": "privdash.application.report.model",
    "Fingerprint": "privdash.application.report.model",
    "FixSummary": "privdash.application.report.model",
    "FORMATS": "privdash.application.report.render",
    "PEOPLE_DEFINITION": "privdash.application.report.definitions",
    "PostcodeUnits": "privdash.application.report.model",
    "printable_values": "privdash.application.report.build",
    "recipe_fix": "privdash.application.report.fix",
    "recipe_steps": "privdash.application.report.build",
    "ReleaseReport": "privdash.application.report.model",
    "render_html": "privdash.application.report.render",
    "render_pdf": "privdash.application.report.render",
    "report_context": "privdash.application.report.render",
    "report_for_state": "privdash.application.report.state",
    "report_format": "privdash.application.report.render",
    "ReportFiles": "privdash.application.report.state",
    "search_fix": "privdash.application.report.fix",
    "shown_threshold": "privdash.application.report.build",
    "table_fingerprint": "privdash.application.report.model",
    "write_report": "privdash.application.report.render",
}

__all__ = [
    "DEFINITIONS",
    "FORMATS",
    "PEOPLE_DEFINITION",
    "AppliedFix",
    "ColumnInfo",
    "Definition",
    "Fingerprint",
    "FixSummary",
    "PostcodeUnits",
    "ReleaseReport",
    "ReportFiles",
    "build_report",
    "condensed_recipe",
    "content_sha256",
    "describe_targets",
    "file_fingerprint",
    "printable_values",
    "recipe_fix",
    "recipe_steps",
    "render_html",
    "render_pdf",
    "report_context",
    "report_for_state",
    "report_format",
    "search_fix",
    "shown_threshold",
    "table_fingerprint",
    "write_report",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
