"""The Fix page's measured attacks: the core's :func:`~privdash.attack.attack_release` on the page's release.

The targets are the records of the open dataset. The release is either the fix previewed on the page (the fixed
table of the view state's step list, :meth:`~privdash.application.fixruns.FixRuns.run`, as the preview and the
downloads use it) or a table the user uploads (CSV or Parquet, read by the core's reader under the upload limits).
The attacker knows how the release was made (Kerckhoffs' principle): for the preview, the recipe of the fix (its
generalization hierarchies and top / bottom codes); for an upload, the same recipe, when the page has a fix, and the
hierarchies that come with the dataset (ARX's for Adult), so that generalized labels match the values they cover.

Each attack's success rate comes with its 95% Wilson interval, its baseline (a random or population guess, see
docs/attacks.md), the risk beyond that baseline, and what the models predict for the same release (prosecutor
average and highest risk, sample uniques, majority share); :func:`attack_rows` words each attack in one sentence for
the privacy officer. Released values that match no original value (labels of a hierarchy the page does not know)
stop the attacks with a message naming them, unless the user declares that they stand for no one (a synthetic
release): a measurement that could not be made is never shown as 0%. Nothing here imports Dash.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd

from privdash.application.fixes import FixError
from privdash.application.fixruns import FixRuns
from privdash.application.formats import fmt_count
from privdash.application.services import Services, clean_filename
from privdash.application.state import ViewState
from privdash.attack import AttackReport, AttackResult, UnmatchedValuesError, attack_release
from privdash.data.tables import read_table_with_info
from privdash.errors import DataReadError, PrivdashError
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.steps import Recipe

__all__ = [
    "ALLOW_UNMATCHED",
    "RELEASE_FORMATS",
    "SOURCES",
    "AttackError",
    "AttackOutcome",
    "AttackRow",
    "Release",
    "attack_rows",
    "attack_state",
    "fix_release",
    "fmt_rate",
    "recipe_columns",
    "uploaded_release",
]

#: Where the released table comes from, and how the page names the choice.
SOURCES: dict[str, str] = {"fix": "The fix previewed above", "upload": "A released table I upload"}
#: The formats a released table may be uploaded in (:class:`~privdash.data.tables.TableInfo` ``format``).
RELEASE_FORMATS = ("csv", "parquet")
#: The baselines the core names, as the page words them.
_BASELINES = {
    "random guess": "a record drawn at random",
    "shuffled columns": "records made of shuffled columns",
    "population guess": "the most frequent value for everyone",
    "control": "control records",
}
#: The page's words for ``allow_unmatched``.
ALLOW_UNMATCHED = "Released values that match nothing stand for no one (a synthetic release)"
#: Progress of the job: (percent, status) at each stage.
ProgressFn = Callable[[int, str], None]


class AttackError(PrivdashError):
    """The attack cannot be run as asked (no quasi-identifier, no file chosen, a fix step that failed)."""


@dataclass(frozen=True, eq=False)
class Release:
    """A released table and what the attacker knows of how it was made.

    Attributes
    ----------
    table
        The released records.
    label
        How the page names the release ("the fix previewed above (2 steps)", a file name).
    recipe
        The recipe that made it (None: no step, or unknown).
    hierarchies
        Further hierarchies the attacker knows, for columns the recipe does not generalize.
    """

    table: pd.DataFrame
    label: str
    recipe: Recipe | None = None
    hierarchies: Mapping[str, Hierarchy] | None = None


@dataclass(frozen=True)
class AttackRow:
    """One attack as the page shows it (rates are fractions in [0, 1]).

    ``predicted`` is the model's figure the bar chart draws next to the measured rate; ``predicted_text`` words
    every model figure of the attack; ``sentence`` is the plain reading for the privacy officer.
    """

    key: str
    label: str
    result: AttackResult
    baseline_label: str
    predicted: float | None
    predicted_text: str
    sentence: str


@dataclass(frozen=True, eq=False)
class AttackOutcome:
    """The report of the attacks on a release, with the page's rows and notes."""

    report: AttackReport
    release: str
    rows: tuple[AttackRow, ...]
    notes: tuple[str, ...]

    @property
    def headline(self) -> str:
        report = self.report
        return (
            f"{self.release}: {fmt_count(report.rows_released)} released records attacked with "
            f"{fmt_count(report.rows_original)} original records as targets; quasi-identifiers "
            f"{', '.join(report.quasi_identifiers)}; {report.seconds:.2f} s."
        )


# --- numbers in words ----------------------------------------------------------------------------------------------


def fmt_rate(value: float | None) -> str:
    """A rate in [0, 1] as a percentage with 3 significant digits (4 from 10%); a rate below 1 never reads 100%."""
    if value is None:
        return "-"
    number = 100 * float(value)
    if number == 0:
        return "0%"
    if number < 0.001:
        return "<0.001%"
    digits = 4 if number >= 10 else 3
    text = f"{number:.{digits}g}"
    while number < 100 and float(text) >= 100 and digits < 8:
        digits += 1
        text = f"{number:.{digits}g}"
    return f"{text}%"


def fmt_interval(low: float, high: float) -> str:
    """``[0.68–0.88%]``: a 95% interval with the percent sign once."""
    return f"[{fmt_rate(low).rstrip('%')}–{fmt_rate(high)}]"


def _attributes(names: tuple[str, ...]) -> str:
    if len(names) == 1:
        return f"this attribute ({names[0]})"
    listed = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return f"these {len(names)} attributes ({listed})"


def _risk_text(result: AttackResult) -> str:
    if result.risk is None:
        return "none (the baseline always succeeds)"
    value, low, high = result.risk
    return f"{fmt_rate(value)} {fmt_interval(low, high)}"


def attack_rows(report: AttackReport) -> tuple[AttackRow, ...]:
    """The page's row of each attack of ``report``: labels, model figures and the sentence for the privacy officer."""
    predicted = report.predicted
    rows: list[AttackRow] = []
    link = report.linkage
    average, highest = predicted["prosecutor_average"], predicted["prosecutor_highest"]
    sentence = (
        f"An attacker who knows {_attributes(report.quasi_identifiers)} finds a person's record "
        f"{fmt_rate(link.targets.rate)} of the time {fmt_interval(link.targets.ci_low, link.targets.ci_high)}; "
        f"the model predicts {fmt_rate(average)} on average and bounds it by {fmt_rate(highest)}."
    )
    if link.targets.ci_low > highest:
        sentence += " The measured rate is above the model's bound: the model misreads this release."
    rows.append(
        AttackRow(
            "linkage",
            "Linkage",
            link,
            _BASELINES.get(link.baseline_kind, link.baseline_kind),
            average,
            f"prosecutor average {fmt_rate(average)}, highest {fmt_rate(highest)}",
            sentence,
        )
    )
    single = report.singling_out
    uniques = predicted["sample_unique_share"]
    rows.append(
        AttackRow(
            "singling_out",
            "Singling out",
            single,
            _BASELINES.get(single.baseline_kind, single.baseline_kind),
            uniques,
            f"sample uniques {fmt_rate(uniques)}",
            f"{fmt_rate(single.targets.rate)} {fmt_interval(single.targets.ci_low, single.targets.ci_high)} of the "
            "released records describe exactly one person, against "
            f"{fmt_rate(single.baseline.rate)} for {_BASELINES.get(single.baseline_kind, single.baseline_kind)}; "
            f"the risk beyond that is {_risk_text(single)}, and the model counts {fmt_rate(uniques)} of the "
            "records as unique in the release.",
        )
    )
    infer = report.inference
    if infer is not None and report.sensitive is not None:
        majority = predicted.get("majority_share")
        baseline = _BASELINES.get(infer.baseline_kind, infer.baseline_kind)
        rows.append(
            AttackRow(
                "inference",
                f"Inference of {report.sensitive}",
                infer,
                baseline,
                majority,
                f"majority share {fmt_rate(majority)}",
                f"Guessing a person's {report.sensitive} from the release is right {fmt_rate(infer.targets.rate)} of "
                f"the time {fmt_interval(infer.targets.ci_low, infer.targets.ci_high)}, against "
                f"{fmt_rate(infer.baseline.rate)} for {baseline}: the release removes {_risk_text(infer)} of the "
                f"remaining uncertainty about the people in it (the model's majority share: {fmt_rate(majority)}).",
            )
        )
    return tuple(rows)


# --- the release -----------------------------------------------------------------------------------------------------


def recipe_columns(recipe: Recipe | None) -> set[str]:
    """The columns a recipe generalizes (their hierarchy comes from the recipe)."""
    if recipe is None:
        return set()
    columns: set[str] = set()
    for step in recipe.steps:
        if step.kind == "generalize":
            columns.update(str(name) for name in dict(step.params.get("columns", {})))
    return columns


def fix_release(runs: FixRuns, state: ViewState, progress: Callable[[int, str], None] | None = None) -> Release:
    """The fix previewed on the page: the state's fixed table (:meth:`FixRuns.run`, the table the preview shows
    and the downloads write) and the recipe that made it. Raises ``PrivdashError`` when a step failed."""
    run = runs.run(state, progress)
    if run.error:
        raise AttackError(run.error + " Undo it before attacking the release.")
    steps = len(run.specs)
    label = (
        f"The fix previewed above ({steps} step{'s' if steps > 1 else ''})"
        if steps
        else "The unchanged dataset (no fix step yet)"
    )
    return Release(run.data, label, run.recipe if run.results else None)


def _decode(contents: str | None) -> bytes:
    if not contents or "," not in contents:
        raise AttackError("Choose the released table: drop a CSV or Parquet file on the upload area, or click it.")
    try:
        return base64.b64decode(contents.split(",", 1)[1], validate=True)
    except (ValueError, binascii.Error):
        raise DataReadError("The uploaded file could not be decoded; choose it again.") from None


def uploaded_release(
    runs: FixRuns, state: ViewState, contents: str | None, filename: str | None, *, recipe: Recipe | None = None
) -> Release:
    """An uploaded released table (``contents``: the browser's ``data:...;base64,...`` URL), read by the core's
    reader under the upload limits; ``recipe`` (the page's fix) and the dataset's own hierarchies are what the
    attacker knows of it. Raises ``DataReadError`` for a file that is not a readable CSV or Parquet table."""
    raw = _decode(contents)
    name = clean_filename(filename)
    services = runs.services
    frame, info = read_table_with_info(
        raw, filename=name, max_bytes=services.settings.max_upload_bytes, limits=services.read_limits
    )
    if info.format not in RELEASE_FORMATS:
        raise DataReadError(f"{name} is a {info.format} file: upload the released table as CSV or Parquet.")
    loaded = services.dataset(str(state.dataset))
    generalized = recipe_columns(recipe)
    known = {c: h for c, h in runs.reference_hierarchies(loaded, state).items() if c not in generalized}
    return Release(frame, name, recipe, known or None)


def attack_state(
    services: Services,
    state: ViewState,
    *,
    source: str = "fix",
    contents: str | None = None,
    filename: str | None = None,
    sensitive: str | None = None,
    progress: ProgressFn | None = None,
    allow_unmatched: bool = False,
) -> AttackOutcome:
    """Run the three attacks on the release of ``source`` (``fix`` or ``upload``) with the state's dataset as the
    targets, its contract's quasi-identifiers, and ``sensitive`` (default: the contract's first sensitive
    attribute; none: no inference attack). Released values that match no original value raise
    :class:`~privdash.attack.UnmatchedValuesError` unless ``allow_unmatched`` (they then stand for no one and
    the outcome's notes list them). Raises ``PrivdashError`` with a message for the page."""
    if source not in SOURCES:
        raise AttackError(f"Unknown release {source!r}: choose {' or '.join(SOURCES)}.")
    if not state.dataset:
        raise FixError("No dataset is open.")
    report_progress: ProgressFn = progress or (lambda _percent, _text: None)
    loaded = services.dataset(state.dataset)
    loaded.require_rows("Attacking a release")
    contract = services.contract(loaded, state)
    qis = list(contract.quasi_identifiers)
    if not qis:
        raise AttackError("Mark the quasi-identifiers on the Risk page first: they are what the attacker knows.")
    if sensitive is None and contract.sensitive:
        sensitive = contract.sensitive[0]
    runs = FixRuns(services)
    report_progress(5, "Applying the fix's steps ...")
    steps: ProgressFn = lambda index, text: report_progress(5, f"Step {index + 1}: {text}")  # noqa: E731
    if source == "fix":
        release = fix_release(runs, state, steps)
    else:
        try:  # what the attacker knows of an uploaded release: the page's fix, when it applies
            recipe = fix_release(runs, state, steps).recipe
        except PrivdashError:
            recipe = None
        report_progress(20, "Reading the released table ...")
        release = uploaded_release(runs, state, contents, filename, recipe=recipe)
    report_progress(40, "Linkage, singling out and inference attacks ...")
    try:
        report = attack_release(
            loaded.frame,
            release.table,
            qis,
            sensitive=sensitive,
            hierarchies=release.hierarchies,
            recipe=release.recipe,
            allow_unmatched=allow_unmatched,
        )
    except UnmatchedValuesError as error:
        raise UnmatchedValuesError(
            f"The attacks were not measured: released values match no original value in {error.listing}. "
            "They may be labels of a hierarchy this page does not know (attack the fix previewed above, whose "
            f"recipe the attacker knows); if they are new values that stand for no one (a synthetic release), tick "
            f"'{ALLOW_UNMATCHED}' and attack again.",
            error.unmatched,
        ) from None
    notes = tuple(
        f"{fmt_count(report.matching[column]['unmatched'])} released value(s) of '{column}' match no original "
        f"value and count as standing for no one, as you chose: {', '.join(repr(v) for v in examples[:3])}"
        + (" ..." if report.matching[column]["unmatched"] > 3 else ".")
        for column, examples in report.unmatched.items()
    )
    return AttackOutcome(report, release.label, attack_rows(report), notes)
