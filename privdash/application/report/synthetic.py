"""The release report's "Synthetic release" section: how a synthetic table was made (method and settings, the seed
withheld), its measured attacks against the control records beside the original's (and the page's generalized
fix's), the distance to the closest record, the steward's estimates before and after, and the verdict.

:class:`SyntheticSection` holds the section's facts, already worded (it is small: no table, so that the dashboard
keeps it beside the release's files and the report job reads it back); :func:`synthetic_section` makes it from the
page's :class:`~privdash.application.synthetic_release.SyntheticOutcome`, :func:`section_from_evaluation` from the
core's evaluation (the CLI). :func:`synthetic_html` renders it for the report's page (HTML and PDF alike), numbered
``number``. Small numbers follow the report's rule: an estimate about fewer than the report's threshold of records is
withheld. Nothing here imports Dash.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import jinja2
import pandas as pd
from markupsafe import Markup

from privdash.application.attack import AttackRow, attack_rows, fmt_interval, fmt_rate
from privdash.application.estimates import printable_rows
from privdash.application.formats import fmt_count, fmt_number, fmt_share
from privdash.application.report.build import build_report
from privdash.application.report.model import Fingerprint, ReleaseReport
from privdash.data.contract import DataContract
from privdash.targets import PrivacyTargets
from privdash.utility.estimates import EstimateComparison

if TYPE_CHECKING:
    from privdash.application.synthesis import SyntheticEvaluation
    from privdash.application.synthetic_release import SyntheticOutcome
    from privdash.synthesis import SynthesisSettings

__all__ = [
    "K_ANONYMITY_NOTE",
    "SyntheticSection",
    "plain_verdict",
    "section_from_evaluation",
    "settings_rows",
    "synthetic_html",
    "synthetic_report",
    "synthetic_section",
]

#: What the verdict says in every case (a synthetic table has no equivalence classes of people).
K_ANONYMITY_NOTE = (
    "k-anonymity does not describe a synthetic table: its records are drawn from a model, not copied from people, so "
    "the sizes of its classes say nothing about who can be found in it. The measured attacks against the control "
    "records say it instead."
)
#: The method's name in the report.
METHOD_NAMES = {
    "partial": "partially synthetic",
    "full": "fully synthetic",
    "hybrid": "hybrid (original and synthetic records)",
    "dp": "differentially private synthetic",
}


@dataclass(frozen=True, eq=False)
class SyntheticSection:
    """A synthetic release in the report (see the module docstring).

    ``settings`` are ``(name, value)`` pairs with the seed withheld; ``compared`` are ``(release label, attack
    rows)`` per release, the synthetic table last; ``distance`` the distance to the closest record as ``(name,
    value)`` pairs; ``charged`` the privacy cost and the population it was charged to (DP only).
    """

    dataset: str
    method: str
    settings: tuple[tuple[str, str], ...]
    model: str
    released_rows: int
    rows_replaced: int
    cells_replaced: int
    training_rows: int
    control_rows: int
    compared: tuple[tuple[str, tuple[AttackRow, ...]], ...]
    distance: tuple[tuple[str, str], ...]
    distance_metric: str
    estimates: tuple[EstimateComparison, ...]
    verdict: str
    notes: tuple[str, ...] = ()
    charged: str | None = None


def plain_verdict(verdict: str) -> str:
    """The evaluation's verdict, with :data:`K_ANONYMITY_NOTE` when it does not already say so."""
    text = verdict.strip()
    return text if "k-anonymity" in text else f"{text} {K_ANONYMITY_NOTE}".strip()


def settings_rows(settings: SynthesisSettings, control_share: float | None = None) -> tuple[tuple[str, str], ...]:
    """The settings as the report prints them; the seed withheld (with it, the release could be made again by anyone
    holding the data, and matched against the released table)."""
    rows = [("method", METHOD_NAMES.get(settings.method, settings.method))]
    columns = ", ".join(settings.columns) if settings.columns else None
    if settings.method == "partial":
        rows.append(("columns replaced", columns or "the quasi-identifiers"))
        rows.append(
            (
                "records replaced",
                f"at risk (in classes smaller than k = {settings.k})" if settings.rows == "at_risk" else "every record",
            )
        )
    else:
        rows.append(("columns modelled", columns or "every column"))
    if settings.method == "hybrid":
        rows.append(("share of records replaced", fmt_share(settings.share)))
    if settings.method == "dp":
        rows.append(("ε (epsilon)", f"{settings.epsilon:g}" if settings.epsilon is not None else "-"))
        rows.append(("δ (delta)", f"{settings.delta:g}"))
        bounds = settings.bounds or {}
        rows.append(
            ("declared bounds", "; ".join(f"{name} {low:g} to {high:g}" for name, (low, high) in bounds.items()) or "-")
        )
        rows.append(("bins of a numeric column", str(settings.bins)))
    else:
        rows.append(("minimum records in a leaf", str(settings.min_leaf)))
    if control_share is not None:
        rows.append(("control records held out", fmt_share(control_share)))
    rows.append(("seed", "withheld (it is recorded in the recipe kept with the data)"))
    return tuple(rows)


def _distance_rows(distance: Any) -> tuple[tuple[str, str], ...]:
    def share(value: float | None) -> str:
        return "-" if value is None else fmt_share(value)

    def number(value: float | None) -> str:
        return "-" if value is None else fmt_number(value, 4)

    return (
        ("released records equal to a training record", share(distance.exact_copies)),
        ("median distance to the closest training record", number(distance.median_training)),
        ("median distance to the closest control record", number(distance.median_control)),
        (
            "released records closer to the training records than to the control records",
            share(distance.closer_to_training),
        ),
        ("records compared", fmt_count(distance.rows)),
    )


def section_from_evaluation(
    evaluation: SyntheticEvaluation,
    *,
    dataset: str,
    training_rows: int,
    control_rows: int,
    control_share: float | None = None,
    compared: Sequence[tuple[str, tuple[AttackRow, ...]]] | None = None,
    notes: Sequence[str] = (),
    charged: str | None = None,
) -> SyntheticSection:
    """The section of a core evaluation; ``compared`` defaults to the training table and the synthetic table."""
    release = evaluation.release
    if compared is None:
        compared = []
        if evaluation.original_attacks is not None:
            compared.append(
                ("The training records themselves (no protection)", attack_rows(evaluation.original_attacks))
            )
        compared.append(("The synthetic table", attack_rows(evaluation.attacks)))
    if charged is None and release.privacy is not None:
        charged = f"ε = {release.privacy.epsilon:g}, δ = {release.privacy.delta:g}"
    distance = evaluation.distance
    return SyntheticSection(
        dataset=dataset,
        method=METHOD_NAMES.get(release.settings.method, release.settings.method),
        settings=settings_rows(release.settings, control_share),
        model=release.model,
        released_rows=len(release.table),
        rows_replaced=release.rows_replaced,
        cells_replaced=release.cells_replaced,
        training_rows=training_rows,
        control_rows=control_rows,
        compared=tuple((label, tuple(rows)) for label, rows in compared),
        distance=_distance_rows(distance),
        distance_metric=str(distance.metric),
        estimates=tuple(evaluation.estimates or ()),
        verdict=plain_verdict(evaluation.verdict),
        notes=tuple(notes),
        charged=charged,
    )


def synthetic_section(outcome: SyntheticOutcome) -> SyntheticSection:
    """The section of a release made from the dashboard's Fix page (with the page's generalized fix, when it has
    one)."""
    charged = None
    privacy = outcome.release.privacy
    if privacy is not None and outcome.identity is not None:
        charged = f"ε = {privacy.epsilon:g}, δ = {privacy.delta:g}, charged to the budget of '{outcome.identity}'"
    return section_from_evaluation(
        outcome.evaluation,
        dataset=outcome.dataset,
        training_rows=outcome.training_rows,
        control_rows=outcome.control_rows,
        control_share=outcome.request.control_share,
        compared=[(item.label, item.rows) for item in outcome.compared],
        notes=[*outcome.notes, *outcome.warnings],
        charged=charged,
    )


def synthetic_report(
    data: pd.DataFrame,
    section: SyntheticSection,
    fingerprint: Fingerprint,
    *,
    quasi_identifiers: Sequence[str],
    sensitive: Sequence[str] = (),
    k: int = 5,
    parameters: Sequence[tuple[str, str]] = (),
) -> ReleaseReport:
    """The release report of the input ``data`` (its classes, risk and the verdict against ``k``, which describe the
    original table) with ``section``, the synthetic release made from it (the command line's ``privdash synthesize
    --report``)."""
    contract = DataContract.for_columns(data, quasi_identifiers=list(quasi_identifiers), sensitive=list(sensitive))
    report = build_report(data, contract, PrivacyTargets(k=k, sensitive=()), fingerprint, parameters=tuple(parameters))
    return replace(report, synthetic=section)


# --- the page --------------------------------------------------------------------------------------------------------


def _attack_rows(section: SyntheticSection) -> list[dict[str, str]]:
    out = []
    for label, rows in section.compared:
        for row in rows:
            result = row.result
            targets = result.targets
            out.append(
                {
                    "release": label,
                    "attack": row.label,
                    "success": f"{fmt_rate(targets.rate)} {fmt_interval(targets.ci_low, targets.ci_high)}",
                    "baseline": f"{fmt_rate(result.baseline.rate)} ({row.baseline_label})",
                    "risk": "-"
                    if result.risk is None
                    else f"{fmt_rate(result.risk[0])} {fmt_interval(result.risk[1], result.risk[2])}",
                }
            )
    return out


TEMPLATE = """\
<section id="synthetic" class="part">
  <h2>{{ number }}. Synthetic release</h2>
  <p>A {{ s.method }} version of {{ s.dataset }}: {{ released }} records released, {{ replaced }} of them with
    synthetic values ({{ cells }} values). The model was fitted on {{ training }} training records;
    {% if s.control_rows %}{{ control }} control records were held out of it, so that the same attacks on them measure
    what anyone would guess about people who are not in the data.{% else %}no control records were held out, so each
    attack is read against its baseline guess.{% endif %}</p>
  <p><strong>Model:</strong> {{ s.model }}</p>
  {% if s.charged %}<p id="synthetic-charged"><strong>Privacy budget:</strong> {{ s.charged }}.</p>{% endif %}
  <table class="facts"><caption>How the synthetic table was made</caption>
    <tbody>{% for name, value in s.settings %}<tr><th>{{ name }}</th><td>{{ value }}</td></tr>{% endfor %}</tbody>
  </table>
  <p id="synthetic-verdict"><strong>Verdict:</strong> {{ s.verdict }}</p>
  <table><caption>Measured attacks{% if s.control_rows %}, against the control records{% endif %}</caption>
    <thead><tr><th>release</th><th>attack</th><th>success [95% CI]</th><th>baseline</th>
      <th>risk beyond the baseline [95% CI]</th></tr></thead>
    <tbody>{% for row in attacks %}<tr><td>{{ row.release }}</td><td>{{ row.attack }}</td><td>{{ row.success }}</td>
      <td>{{ row.baseline }}</td><td>{{ row.risk }}</td></tr>{% endfor %}</tbody>
  </table>
  <table class="facts"><caption>Distance to the closest record ({{ s.distance_metric }})</caption>
    <tbody>{% for name, value in s.distance %}<tr><th>{{ name }}</th><td class="num">{{ value }}</td></tr>{% endfor %}
    </tbody>
  </table>
  {% if estimates %}
  <table><caption>The steward's estimates, on the training records and on the synthetic table</caption>
    <thead><tr><th>estimate</th><th>term</th><th>original [95% CI]</th><th>synthetic [95% CI]</th>
      <th class="num">overlap</th></tr></thead>
    <tbody>{% for row in estimates %}<tr><td>{{ row.estimate }}</td><td>{{ row.term }}</td><td>{{ row.before }}</td>
      <td>{{ row.after }}</td><td class="num">{{ row.overlap }}</td></tr>{% endfor %}</tbody>
  </table>
  {% endif %}
  {% if withheld %}<p class="note">{{ withheld }} numbers about fewer than {{ threshold }} records are withheld.</p>
  {% endif %}
  {% for note in s.notes %}<p class="note">{{ note }}</p>{% endfor %}
</section>
"""

_ENVIRONMENT = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def synthetic_html(section: SyntheticSection | None, number: int, *, threshold: int) -> Markup:
    """The section as HTML for the report's page (empty without a synthetic release)."""
    if section is None:
        return Markup("")
    estimates, withheld = printable_rows(section.estimates, threshold)
    html = _ENVIRONMENT.from_string(TEMPLATE).render(
        s=section,
        number=number,
        released=fmt_count(section.released_rows),
        replaced=fmt_count(section.rows_replaced),
        cells=fmt_count(section.cells_replaced),
        training=fmt_count(section.training_rows),
        control=fmt_count(section.control_rows),
        attacks=_attack_rows(section),
        estimates=estimates,
        withheld=withheld,
        threshold=threshold,
    )
    return Markup(html)
