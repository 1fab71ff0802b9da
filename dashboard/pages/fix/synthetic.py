"""The Fix page's "Synthetic data" section: a partially, fully, hybrid or differentially private synthetic release of
the open dataset, judged by the same attacks and estimates as every other fix.

A thin adapter over :mod:`privdash.application.synthetic_release`: :func:`card` places the form (method, columns,
records at risk or all, share, ε / δ and declared bounds, the share of control records, the seed) and the button;
nothing is computed on page load. The button starts a background job (:mod:`dashboard.ui.jobs`: queued, under the
server's limits, with a progress bar and a Cancel button) that makes the release, attacks it against the control
records beside the original and the page's generalized fix, measures the distance to the closest record and the
steward's estimates (the estimates section's text), and keeps the files (:class:`SyntheticFiles`). Its result: the
verdict (which says that k-anonymity does not describe a synthetic table), the attacks table, the distance, the
estimates and the downloads (the synthetic CSV, spreadsheet-safe, and the recipe). A DP release is charged to the
dataset's budget ledger, the one the "Differential privacy" section shows. The token of the last release is in a
store (``{"type": "synthetic-token", "page": "fix"}``) that the report button reads, so the report includes it.
Ids start with ``synth-``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import dash_mantine_components as dmc
from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard.ui.components import card as card_frame
from dashboard.ui.components import error_alert, progress_panel, scroll_table
from dashboard.ui.pagestate import PAGE_STATE, state_from_store
from privdash.application.attack import fmt_interval, fmt_rate
from privdash.application.estimates import fmt_interval as fmt_estimate_interval
from privdash.application.estimates import fmt_overlap, read_estimates
from privdash.application.formats import fmt_count
from privdash.application.report.synthetic import plain_verdict
from privdash.application.services import LoadedDataset, Services
from privdash.application.state import StateError, ViewState
from privdash.application.synthetic_release import (
    CONTROL_SHARE,
    METHODS,
    ROWS,
    SyntheticFiles,
    SyntheticOutcome,
    SyntheticRequest,
    default_columns,
    synthesize_state,
)
from privdash.dp import BudgetExceededError
from privdash.errors import PrivdashError
from privdash.utility.estimates import EstimateComparison

__all__ = ["TOKEN_ID", "card", "register", "result_view", "visibility"]

#: The store of the last release's token (a pattern id: the report reads it with ``ALL`` on the pages that have it).
TOKEN_ID = {"type": "synthetic-token", "page": "fix"}
_HIDDEN, _SHOWN = {"display": "none"}, {"display": "block"}
#: A rate and its interval stay on one line (the table scrolls sideways on a narrow page instead).
_NOWRAP = {"whiteSpace": "nowrap"}
_REGISTERED: weakref.WeakSet[Dash] = weakref.WeakSet()


def visibility(method: str | None) -> tuple[dict[str, str], ...]:
    """Styles of the partial, hybrid and DP fields for ``method``."""
    return (
        _SHOWN if method == "partial" else _HIDDEN,
        _SHOWN if method == "hybrid" else _HIDDEN,
        _SHOWN if method == "dp" else _HIDDEN,
    )


def _k(state: ViewState) -> int:
    return int(getattr(state.targets, "k", 5) or 5)


def card(loaded: LoadedDataset, state: ViewState, services: Services) -> Any:
    """The section's component for the open dataset: the form, the progress and where the result goes."""
    title = "Synthetic data"
    if loaded.source is not None:
        return card_frame(
            title,
            dmc.Text(
                f"'{loaded.title}' is a server-side source: a synthetic release fits a model to every row in the "
                "server's memory. Make it from the command line: privdash synthesize FILE --method full ...",
                size="sm",
            ),
            mt="md",
            id="synth-card",
        )
    columns = list(map(str, loaded.columns))
    modelled = default_columns(loaded, services, state)
    try:
        entity = services.contract(loaded, state).entity
    except PrivdashError:
        entity = None
    partial_style, hybrid_style, dp_style = visibility("full")
    decimal = {"inputMode": "decimal"}
    form = dmc.Stack(
        [
            dmc.RadioGroup(
                dmc.Stack([dmc.Radio(label=label, value=value) for value, label in METHODS.items()], gap=6),
                id="synth-method",
                label="Method",
                value="full",
                size="sm",
            ),
            dmc.MultiSelect(
                id="synth-columns",
                label="Columns",
                description="Partially synthetic: the columns whose values are replaced (empty: the quasi-identifiers)."
                " Otherwise: the columns modelled and released (empty: "
                + (", ".join(modelled[:12]) + (f" and {len(modelled) - 12} more" if len(modelled) > 12 else ""))
                + "; never direct identifiers, household or person ids).",
                data=columns,
                value=[],
                searchable=True,
                clearable=True,
                maw=720,
            ),
            html.Div(
                dmc.Group(
                    [
                        dmc.RadioGroup(
                            dmc.Group([dmc.Radio(label=label, value=value) for value, label in ROWS.items()], mt=4),
                            id="synth-rows",
                            label="Records whose values are replaced",
                            value="at_risk",
                            size="sm",
                        ),
                        dmc.NumberInput(
                            id="synth-k",
                            label="k of the records at risk",
                            description="Classes smaller than k over the quasi-identifiers",
                            value=_k(state),
                            min=2,
                            step=1,
                            allowDecimal=False,
                            w=240,
                        ),
                    ],
                    gap="lg",
                    align="flex-start",
                ),
                id="synth-partial-box",
                style=partial_style,
            ),
            html.Div(
                dmc.NumberInput(
                    id="synth-share",
                    label="Share of the records replaced",
                    description="Between 0 and 1: the rest stay original records",
                    value=0.5,
                    min=0.01,
                    max=1,
                    step=0.05,
                    decimalScale=3,
                    w=280,
                ),
                id="synth-hybrid-box",
                style=hybrid_style,
            ),
            html.Div(
                dmc.Stack(
                    [
                        dmc.Group(
                            [
                                dmc.TextInput(
                                    id="synth-epsilon",
                                    label="ε (epsilon) of the release",
                                    description="Charged to the dataset's privacy budget",
                                    value="1",
                                    inputProps=decimal,
                                    w=240,
                                ),
                                dmc.TextInput(
                                    id="synth-delta",
                                    label="δ (delta)",
                                    description="e.g. 1e-6; 0 needs every domain declared",
                                    value="1e-6",
                                    inputProps=decimal,
                                    w=240,
                                ),
                                dmc.TextInput(
                                    id="synth-identity",
                                    label="Population (dataset identity)",
                                    description="Whose budget it spends; empty: as the DP section decides",
                                    placeholder=loaded.title,
                                    w=320,
                                ),
                            ],
                            gap="md",
                            align="flex-start",
                        ),
                        html.Div(
                            dmc.NumberInput(
                                id="synth-max-rows",
                                label="Rows kept per person",
                                description=f"'{entity}' gives a person several rows: each person's rows are cut to "
                                "this many, and every measurement is calibrated at it (required)."
                                if entity is not None
                                else "",
                                min=1,
                                step=1,
                                allowDecimal=False,
                                allowNegative=False,
                                placeholder="e.g. 3",
                                maw=640,
                            ),
                            id="synth-max-rows-box",
                            style={"display": "block"} if entity is not None else {"display": "none"},
                        ),
                        dmc.Textarea(
                            id="synth-bounds",
                            label="Declared bounds of the numeric columns",
                            description="column=low:high, one a line or separated by commas (e.g. age=17:90). "
                            "Public bounds, never read from the data: a numeric column without them is refused.",
                            placeholder="age=0:100",
                            autosize=True,
                            minRows=2,
                            maw=720,
                        ),
                    ],
                    gap="sm",
                ),
                id="synth-dp-box",
                style=dp_style,
            ),
            dmc.Group(
                [
                    dmc.NumberInput(
                        id="synth-control",
                        label="Share of control records",
                        description="Held out of the model: the attacks' baseline",
                        value=CONTROL_SHARE,
                        min=0.05,
                        max=0.5,
                        step=0.05,
                        decimalScale=3,
                        w=280,
                    ),
                    dmc.NumberInput(
                        id="synth-seed",
                        label="Seed",
                        description="Empty: drawn, and recorded in the recipe",
                        min=0,
                        step=1,
                        allowDecimal=False,
                        allowNegative=False,
                        placeholder="e.g. 42",
                        w=280,
                    ),
                ],
                gap="md",
                align="flex-start",
            ),
            dmc.Group(
                [
                    dmc.Button("Make and judge the synthetic release", id="synth-run", variant="filled"),
                    dmc.Text(
                        "Fitting may take a minute on a large table; it runs in the background.",
                        size="sm",
                        c="dimmed",
                    ),
                ],
                gap="md",
            ),
        ],
        gap="sm",
    )
    return card_frame(
        title,
        form,
        html.Div(
            progress_panel("synth", label="Progress of the synthetic release"),
            id="synth-running",
            style={"display": "none"},
        ),
        html.Div(id="synth-result"),
        dcc.Store(id=TOKEN_ID, data=None),
        dcc.Download(id="synth-download"),
        description="Instead of coarsening the records, release records drawn from a model of them: replace the "
        "values at risk (partially synthetic), every record (fully synthetic), a share of them (hybrid), or with "
        "differential privacy. The release is judged by the measured attacks against control records held out of "
        "the model, the distance to the closest record and your estimates (docs/synthesis.md).",
        mt="md",
        id="synth-card",
    )


# --- the result ------------------------------------------------------------------------------------------------------


def attacks_table(outcome: SyntheticOutcome) -> Any:
    """Per release compared and attack: success [95% CI], the baseline on the control records, the risk beyond it."""
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("release"),
                dmc.TableTh("attack"),
                dmc.TableTh("success [95% CI]"),
                dmc.TableTh("baseline"),
                dmc.TableTh("risk beyond the baseline [95% CI]"),
            ]
        )
    )
    body = []
    for item in outcome.compared:
        for index, row in enumerate(item.rows):
            result = row.result
            risk = "-" if result.risk is None else f"{fmt_rate(result.risk[0])} {fmt_interval(*result.risk[1:])}"
            body.append(
                dmc.TableTr(
                    [
                        dmc.TableTh(item.label if index == 0 else "", fw=500),
                        dmc.TableTd(row.label),
                        dmc.TableTd(
                            [
                                html.Span(fmt_rate(result.targets.rate), className="synth-rate"),
                                " ",
                                fmt_interval(result.targets.ci_low, result.targets.ci_high),
                            ],
                            style=_NOWRAP,
                        ),
                        dmc.TableTd(f"{fmt_rate(result.baseline.rate)} ({row.baseline_label})"),
                        dmc.TableTd(risk, style=_NOWRAP),
                    ],
                    id=f"synth-row-{item.key}-{row.key}",
                )
            )
    caption = dmc.TableCaption(
        "The same attacks, with the same control records as their baseline, on each release.", ta="left", fw=500
    )
    return scroll_table(
        "Measured attacks on the releases compared",
        dmc.Table([caption, head, dmc.TableTbody(body)], fz="sm", striped=True, id="synth-attacks", captionSide="top"),
        minWidth=760,
    )


def distance_table(outcome: SyntheticOutcome) -> Any:
    distance = outcome.evaluation.distance

    def share(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}%"

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.4g}"

    rows = (
        ("Released records equal to a training record", share(distance.exact_copies)),
        ("Median distance to the closest training record", number(distance.median_training)),
        ("Median distance to the closest control record", number(distance.median_control)),
        ("Released records closer to the training than to the control records", share(distance.closer_to_training)),
    )
    body = dmc.TableTbody(
        [dmc.TableTr([dmc.TableTh(name, fw=500), dmc.TableTd(value, ta="right")]) for name, value in rows]
    )
    return dmc.Stack(
        [
            dmc.Table(
                [dmc.TableCaption("Distance to the closest record", ta="left", fw=500), body],
                fz="sm",
                id="synth-distance",
                captionSide="top",
                maw=720,
            ),
            dmc.Text(
                f"{distance.metric}; {fmt_count(distance.rows)} released records compared.", size="xs", c="dimmed"
            ),
        ],
        gap=0,
    )


def estimates_table(comparisons: Sequence[EstimateComparison]) -> Any:
    """The steward's estimates on the training records and on the synthetic table."""
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("estimate"),
                dmc.TableTh("of"),
                dmc.TableTh("original [95% CI]"),
                dmc.TableTh("synthetic [95% CI]"),
                dmc.TableTh("overlap", ta="right"),
            ]
        )
    )
    body = [
        dmc.TableTr(
            [
                dmc.TableTd(comparison.estimate.text()),
                dmc.TableTh(row.term + (f" ({row.group})" if row.group else ""), fw=500),
                dmc.TableTd(fmt_estimate_interval(row.before)),
                dmc.TableTd(fmt_estimate_interval(row.after)),
                dmc.TableTd(fmt_overlap(row.overlap), ta="right"),
            ]
        )
        for comparison in comparisons
        for row in comparison.rows
    ]
    return scroll_table(
        "Estimates on the original and the synthetic table",
        dmc.Table(
            [dmc.TableCaption("Your estimates, before and after", ta="left", fw=500), head, dmc.TableTbody(body)],
            fz="sm",
            striped=True,
            id="synth-estimates",
            captionSide="top",
        ),
        minWidth=640,
    )


def result_view(outcome: SyntheticOutcome, token: str) -> Any:
    """The job's result: the verdict, the headline, the attacks, the distance, the estimates and the downloads."""
    evaluation = outcome.evaluation
    parts: list[Any] = [
        dmc.Alert(
            plain_verdict(evaluation.verdict),
            title="Verdict on the synthetic release",
            color="blue",
            variant="light",
            id="synth-verdict",
        ),
        dmc.Text(outcome.headline, size="sm", id="synth-headline"),
        dmc.Text(f"Model: {outcome.release.model}", size="xs", c="dimmed"),
    ]
    if outcome.account is not None and outcome.release.privacy is not None:
        left_epsilon, left_delta = outcome.account.remaining
        cost = outcome.release.privacy
        parts.append(
            dmc.Alert(
                f"ε = {cost.epsilon:g}, δ = {cost.delta:g} charged to the budget of '{outcome.identity}'; remaining "
                f"ε = {left_epsilon:.4g}, δ = {left_delta:.3g}. The Differential privacy section lists the charge "
                "when the page is opened again.",
                title="Charged to the privacy budget",
                color="blue",
                variant="light",
                id="synth-charged",
            )
        )
    for warning in outcome.warnings:
        parts.append(dmc.Alert(warning, title="Warning: a similar table", color="yellow", variant="light"))
    parts.append(attacks_table(outcome))
    parts.append(distance_table(outcome))
    if evaluation.estimates:
        parts.append(estimates_table(evaluation.estimates))
    else:
        parts.append(
            dmc.Text(
                "No estimate was named in the Estimates section: name some there to compare them.",
                size="xs",
                c="dimmed",
                id="synth-no-estimates",
            )
        )
    notes = [*outcome.notes]
    if outcome.columns_left_out:
        notes.append(
            f"Not in the synthetic table: {', '.join(outcome.columns_left_out)} (direct identifiers and columns not "
            "modelled)."
        )
    if notes:
        parts.append(dmc.List([dmc.ListItem(dmc.Text(note, size="xs")) for note in notes], id="synth-notes"))
    parts.append(
        dmc.Group(
            [
                dmc.Button(
                    label,
                    id={"type": "synth-get", "kind": kind, "token": token},
                    variant="light",
                )
                for kind, label in (
                    ("csv", f"Download the synthetic table (CSV, {fmt_count(len(outcome.release.table))} rows)"),
                    ("recipe", "Download the recipe (JSON)"),
                )
            ],
            gap="sm",
        )
    )
    parts.append(
        dmc.Text(
            "The recipe records the seed, so it re-makes this release: keep it with the data, not with the release. "
            "The release report (below) includes this synthetic release, its seed withheld.",
            size="xs",
            c="dimmed",
        )
    )
    return dmc.Stack(parts, gap="sm", mt="sm")


# --- callbacks -------------------------------------------------------------------------------------------------------


def register(app: Dash, services: Services) -> None:
    """Add the section's callbacks to ``app`` (once; later calls for the same app do nothing)."""
    if app in _REGISTERED:
        return
    _REGISTERED.add(app)
    files = SyntheticFiles.of(services)

    @app.callback(
        Output("synth-partial-box", "style"),
        Output("synth-hybrid-box", "style"),
        Output("synth-dp-box", "style"),
        Input("synth-method", "value"),
        prevent_initial_call=True,
    )
    def show_fields(method: str | None) -> tuple[dict[str, str], ...]:
        return visibility(method)

    @app.callback(
        Output("synth-result", "children"),
        Output(TOKEN_ID, "data"),
        Input("synth-run", "n_clicks"),
        State(PAGE_STATE, "data"),
        State("synth-method", "value"),
        State("synth-columns", "value"),
        State("synth-rows", "value"),
        State("synth-k", "value"),
        State("synth-share", "value"),
        State("synth-epsilon", "value"),
        State("synth-delta", "value"),
        State("synth-bounds", "value"),
        State("synth-identity", "value"),
        State("synth-max-rows", "value"),
        State("synth-control", "value"),
        State("synth-seed", "value"),
        # The Fix page's estimates (the estimates section's text box).
        State({"type": "estimates-input", "page": ALL}, "value"),
        prevent_initial_call=True,
        background=True,
        progress=[Output("synth-progress", "value"), Output("synth-status", "children")],
        running=[
            (Output("synth-running", "style"), {"display": "block"}, {"display": "none"}),
            (Output("synth-run", "disabled"), True, False),
        ],
        cancel=[Input("synth-cancel", "n_clicks"), Input("url", "pathname")],
        interval=400,
    )
    def make(
        set_progress: Callable[[tuple[int, str]], None],
        clicks: int | None,
        data: Any,
        method: Any,
        chosen: Any,
        rows: Any,
        k: Any,
        share: Any,
        epsilon: Any,
        delta: Any,
        bounds: Any,
        identity: Any,
        max_rows: Any,
        control: Any,
        seed: Any,
        named: list[Any] | None,
    ) -> tuple[Any, Any]:
        if not clicks:
            return no_update, no_update
        try:
            state = state_from_store(data)
            loaded = services.dataset(state.dataset or "")
            request = SyntheticRequest.from_form(
                list(map(str, loaded.columns)),
                method=method,
                chosen=chosen,
                rows=rows,
                k=k,
                share=share,
                epsilon=epsilon,
                delta=delta,
                bounds=bounds,
                control_share=control,
                seed=seed,
                identity=identity,
                max_rows=max_rows,
            )
            estimates = [spec for text in named or [] for spec in read_estimates(text if isinstance(text, str) else "")]
            outcome = synthesize_state(
                services,
                state,
                request,
                estimates=estimates,
                progress=lambda percent, text: set_progress((percent, text)),
            )
            token = files.put(outcome)
        except BudgetExceededError as exc:
            return error_alert(str(exc), title="Refused: over the privacy budget", alert_id="synth-error"), None
        except (PrivdashError, StateError) as exc:
            return error_alert(str(exc), title="No synthetic release was made", alert_id="synth-error"), None
        return result_view(outcome, token), token

    @app.callback(
        Output("synth-download", "data"),
        Input({"type": "synth-get", "kind": ALL, "token": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def download(clicks: list[int | None]) -> Any:
        trigger = ctx.triggered_id
        if not isinstance(trigger, dict) or not any(clicks or ()):
            return no_update
        try:
            name, content = files.get(str(trigger["token"]), str(trigger["kind"]))
        except PrivdashError:
            return no_update
        kind = "text/csv" if name.endswith(".csv") else "application/json"
        return {"content": content.decode("utf-8"), "filename": name, "type": kind}
