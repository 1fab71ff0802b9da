"""The Report button: the release report of the page's view, made in a background job, offered as HTML and PDF.

:func:`report_card` is the component a page places; :func:`register` adds its callbacks once per app (pages that
show the card may all call it). Pressing the button starts a background job (:mod:`dashboard.ui.jobs`: queued,
under the server's time and memory limits, with a progress bar and a cancel button) that builds the report of the
view in the page's state (:func:`~privdash.application.report.report_for_state`: dataset, roles, targets, fix
steps, the estimates named in the Fix page's estimates section, and the Fix page's last synthetic release),
renders both files and keeps them in the disk
cache for the store's lifetime (:class:`~privdash.application.report.ReportFiles`). Its result is the verdict and
two download buttons; a download reads the kept file, so no worker computes the report twice.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import dash_mantine_components as dmc
from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard.ui.components import SIGNOFF_STORE, card, error_alert, progress_panel
from dashboard.ui.pagestate import PAGE_STATE, state_from_store
from privdash.application.estimates import read_estimates
from privdash.application.report import ReleaseReport, ReportFiles, report_for_state
from privdash.application.report.render import render_files
from privdash.application.services import Services
from privdash.application.synthetic_release import SyntheticFiles
from privdash.errors import PrivdashError

__all__ = ["register", "report_card", "report_ready"]

#: Share of the progress bar the report's assembly takes; rendering the two files takes the rest.
_ASSEMBLY = 0.8
_REGISTERED: weakref.WeakSet[Dash] = weakref.WeakSet()


def report_card(**props: Any) -> Any:
    """The Report button, the job's progress and the downloads (ids ``report-*``)."""
    return card(
        "Release report",
        dmc.Group(
            [
                dmc.Button("Make the report", id="report-make", variant="filled"),
                dmc.Text(
                    "HTML and PDF, with the verdict, every number and its definition, the fix steps and a sign-off "
                    "block.",
                    size="sm",
                    c="dimmed",
                ),
            ],
            gap="md",
        ),
        html.Div(
            progress_panel("report", label="Progress of the report"), id="report-running", style={"display": "none"}
        ),
        html.Div(id="report-result"),
        dcc.Download(id="report-download"),
        description="One document for the privacy officer who signs off the release. Quasi-identifier values of "
        "classes smaller than the target k are never printed in it.",
        mt="md",
        id="report-card",
        **props,
    )


def _stem(title: str) -> str:
    """A file-name stem from the dataset's title (letters, digits, dot, dash, underscore)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(title).stem).strip("-.")[:60]
    return stem or "privdash"


def report_ready(report: ReleaseReport, token: str) -> Any:
    """The job's result: a headline saying the report is ready and its verdict, the verdict's sentence and the two
    downloads."""
    verdict = report.verdict
    return dmc.Stack(
        [
            dmc.Alert(
                verdict.sentence(),
                title=f"Report ready - verdict: {'PASS' if verdict.passed else 'FAIL'}",
                color="green" if verdict.passed else "red",
                variant="light",
                id="report-verdict",
                **{"data-status": verdict.status},
            ),
            dmc.Group(
                [
                    dmc.Button(
                        label,
                        id={"type": "report-get", "kind": kind, "token": token},
                        variant="light",
                    )
                    for kind, label in (("pdf", "Download the PDF"), ("html", "Download the HTML file"))
                ],
                gap="sm",
            ),
        ],
        gap="xs",
        mt="sm",
    )


def register(app: Dash, services: Services) -> None:
    """Add the card's callbacks to ``app`` (once; later calls for the same app do nothing)."""
    if app in _REGISTERED:
        return
    _REGISTERED.add(app)
    files = ReportFiles(services.settings.cache_dir / "reports", ttl=services.settings.store_ttl)
    synthetic_files = SyntheticFiles.of(services)

    @app.callback(
        Output("report-result", "children"),
        Input("report-make", "n_clicks"),
        State(PAGE_STATE, "data"),
        # The Fix page's estimates (none on pages without the section: ALL matches nothing there).
        State({"type": "estimates-input", "page": ALL}, "value"),
        # The sign-off fields the steward filled in on the Data page (this browser's copy).
        State(SIGNOFF_STORE, "data"),
        # The Fix page's last synthetic release (none on pages without the section).
        State({"type": "synthetic-token", "page": ALL}, "data"),
        prevent_initial_call=True,
        background=True,
        progress=[Output("report-progress", "value"), Output("report-status", "children")],
        running=[
            (Output("report-running", "style"), {"display": "block"}, {"display": "none"}),
            (Output("report-make", "disabled"), True, False),
        ],
        cancel=[Input("report-cancel", "n_clicks"), Input("url", "pathname")],
        interval=400,
    )
    def make_report(
        set_progress: Callable[[tuple[int, str]], None],
        clicks: int | None,
        data: Any,
        named: list[Any] | None,
        signoff: Any,
        synthetic: list[Any] | None = None,
    ) -> Any:
        if not clicks:
            return no_update
        try:
            state = state_from_store(data)
            estimates = [spec for text in named or [] for spec in read_estimates(text if isinstance(text, str) else "")]
            report = report_for_state(
                services,
                state,
                lambda percent, text: set_progress((int(_ASSEMBLY * percent), text)),
                estimates=estimates,
                signoff={str(k): v for k, v in signoff.items() if isinstance(v, str)}
                if isinstance(signoff, dict)
                else None,
            )
            tokens = [token for token in synthetic or [] if isinstance(token, str) and token]
            if tokens:
                report = with_synthetic(report, synthetic_files, tokens[-1])
            set_progress((int(100 * _ASSEMBLY), "Rendering the HTML and PDF files ..."))
            token = files.put(render_files(report, _stem(report.title)))
        except PrivdashError as exc:
            return error_alert(str(exc), title="The report was not made", alert_id="report-error")
        return report_ready(report, token)

    @app.callback(
        Output("report-download", "data"),
        Input({"type": "report-get", "kind": ALL, "token": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def download(clicks: list[int | None]) -> Any:
        trigger = ctx.triggered_id
        if not isinstance(trigger, dict) or not any(clicks or ()):
            return no_update
        name, content = files.get(str(trigger["token"]), str(trigger["kind"]))
        return dcc.send_bytes(content, name)


def with_synthetic(report: ReleaseReport, files: SyntheticFiles, token: str) -> ReleaseReport:
    """The report with the Fix page's synthetic release kept under ``token`` when it was made from the report's
    dataset; an expired one is left out with a note."""
    try:
        section = files.section(token)
    except PrivdashError:
        note = "The synthetic release made on the Fix page has expired: make it again to include it in the report."
        return replace(report, left_out=(*report.left_out, note))
    return replace(report, synthetic=section) if section.dataset == report.title else report


def _signoff(stored: Any) -> dict[str, str] | None:
    """The sign-off fields of the shell's store (this browser's copy; anything but texts is left out)."""
    if not isinstance(stored, dict):
        return None
    return {str(name): value for name, value in stored.items() if isinstance(value, str)}
