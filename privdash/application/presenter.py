"""Presenter's mode: a dataset's story as six slides for a projector, one idea per slide.

A *deck* (:func:`deck`) walks the view state's dataset through its story:

1. ``table``: the table (records, columns, what an attacker may know, its first records);
2. ``unique``: who is unique and why (the diagnosis's sample uniques, and the smallest combinations of
   quasi-identifiers that single them out: :func:`~privdash.measure.combinations.minimal_sample_uniques`);
3. ``verdict``: the core's verdict on the view's targets (:func:`~privdash.application.riskview.release_verdict`);
4. ``fix``: the cheapest fix: the state's own fix steps (a presentation's, or the Fix page's list), or, when it has
   none, the least-lossy search for the view's targets (:func:`presented_fix`), with the headline numbers before and
   after (:func:`~privdash.application.riskview.fix_headlines`);
5. ``attack``: what the measured attacks find (:func:`~privdash.application.attack.attack_state`) on the table as it
   is and on the fixed release;
6. ``sample``: a few released records beside their originals (:func:`~privdash.application.fixes.row_sample`).

Each slide is a frozen :class:`Slide`: a title, one big number or sentence (``headline``), a supporting sentence, and
at most a small table (:class:`SlideTable`) and a bar chart (:class:`SlideBars`): plain data, no Dash. The slides that
take time (the fix, the attacks, the sample; the uniques of a large table) are *slow*: :func:`deck` shows them
pending unless they were computed before, and :func:`compute_slow` computes them (the page runs it in a background
job) and keeps each slide on disk (``<cache_dir>/presenter``, ``store_ttl`` seconds) under a key of everything it
depends on, so every worker and a reload show it at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import diskcache
import pandas as pd

from privdash.application.attack import AttackOutcome, attack_state, fmt_rate
from privdash.application.cache import disk_cache
from privdash.application.fixes import FixRun, cheapest_fix, describe_result, describe_spec, row_sample
from privdash.application.fixruns import FixRuns
from privdash.application.formats import fmt_count, fmt_number, fmt_share, in_people
from privdash.application.riskview import Headline, fix_headlines, release_verdict
from privdash.application.services import LoadedDataset, Services
from privdash.application.state import ViewState
from privdash.data.demo import demo_datasets
from privdash.errors import PrivdashError
from privdash.measure.classes import MissingPolicy
from privdash.measure.combinations import minimal_sample_uniques
from privdash.measure.diagnose import Diagnosis
from privdash.measure.verdict import TargetCheck
from privdash.targets import DEFAULT_MAX_SUPPRESSION
from privdash.transform.hierarchy import canonical_text
from privdash.transform.identifiers import key_fingerprint

__all__ = [
    "QUICK_UNIQUES",
    "SLIDE_KEYS",
    "SLIDE_TITLES",
    "Deck",
    "Slide",
    "SlideBars",
    "SlideTable",
    "compute_slow",
    "deck",
    "presented_fix",
]

#: The slides of a deck, in order.
SLIDE_KEYS = ("table", "unique", "verdict", "fix", "attack", "sample")
SLIDE_TITLES = {
    "table": "The table",
    "unique": "Who is unique, and why",
    "verdict": "The verdict",
    "fix": "The cheapest fix",
    "attack": "What an attack measures",
    "sample": "The released sample",
}
#: Slides that always take a fix run or attacks (seconds on the built-in tables): computed in the background.
_ALWAYS_SLOW = frozenset({"fix", "attack", "sample"})
#: The uniques slide is computed at once when rows x 2^QIs is at most this (the minimal-sample-unique search visits
#: every subset of the QIs; 50,000 rows of 8 QIs take well under a second).
QUICK_UNIQUES = 20_000_000
#: Records, columns and combinations a slide's table shows at most (large type: a few lines fill the screen).
SAMPLE_ROWS = 5
SAMPLE_COLUMNS = 6
TOP_COMBINATIONS = 5


@dataclass(frozen=True)
class SlideTable:
    """A small table: column titles, rows of display text, and which columns hold numbers (right-aligned)."""

    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()


@dataclass(frozen=True)
class SlideBars:
    """A bar chart: one group of bars per label, one bar per series; values are fractions in [0, 1] and ``texts``
    their display text (same shape as ``values``: ``values[series][label]``)."""

    caption: str
    labels: tuple[str, ...]
    series: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    texts: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Slide:
    """One screen of the story.

    Attributes
    ----------
    key
        One of :data:`SLIDE_KEYS`.
    title
        The slide's heading.
    headline
        The one big number or sentence.
    detail
        A supporting sentence (may be empty).
    passed
        For a verdict: True (meets every target), False (fails); None when the slide judges nothing.
    table, bars
        At most a small table and a bar chart.
    pending
        The slide is being computed (its content is not known yet).
    error
        The slide could not be computed; ``detail`` says why.
    """

    key: str
    title: str
    headline: str = ""
    detail: str = ""
    passed: bool | None = None
    table: SlideTable | None = None
    bars: SlideBars | None = None
    pending: bool = False
    error: bool = False


@dataclass(frozen=True)
class Deck:
    """A dataset's story: its title, its one-line story (a built-in dataset's description; None for an upload), the
    state it was made for (with the fix it presents) and its slides in :data:`SLIDE_KEYS` order."""

    title: str
    story: str | None
    state: ViewState
    slides: tuple[Slide, ...]

    @property
    def pending(self) -> bool:
        """True while a slide still has to be computed (:func:`compute_slow`)."""
        return any(slide.pending for slide in self.slides)

    def slide(self, key: str) -> Slide:
        return next(slide for slide in self.slides if slide.key == key)


def presented_fix(state: ViewState, *, sensitive: bool) -> tuple[Mapping[str, Any], ...]:
    """The fix the deck presents: the state's own steps when it has some, else the least-lossy search (global
    recoding, least loss) for the view's targets: k, the risk cap when set, l and t when ``sensitive`` (a sensitive
    attribute is measured), the release rules, and the default suppression limit."""
    if state.fix:
        return tuple(state.fix)
    spec: dict[str, Any] = {"kind": "search", "k": state.k}
    if sensitive:
        spec.update(l=state.l, t=state.t)
    if state.max_risk:
        spec["max_risk"] = state.max_risk
    spec.update(max_suppression=DEFAULT_MAX_SUPPRESSION, metric="loss")
    if state.release:
        spec["release"] = dict(state.release)
    return (spec,)


# --- the context the slides share --------------------------------------------------------------------------------


class _Context:
    """The state's dataset, diagnosis, fix run and attacks, each computed once and only when a slide needs it."""

    def __init__(self, services: Services, state: ViewState, progress: Callable[[int, str], None] | None) -> None:
        self.services = services
        self.state = state
        self.progress = progress or (lambda _percent, _text: None)
        self.loaded: LoadedDataset = services.dataset(str(state.dataset))
        self.runs = FixRuns(services)

    @cached_property
    def diagnosis(self) -> Diagnosis:
        return self.services.diagnosis(self.state)

    @cached_property
    def people(self) -> bool:
        return self.diagnosis.entity is not None

    @cached_property
    def fix_state(self) -> ViewState:
        contract = self.services.contract(self.loaded, self.state)
        return self.state.updated(fix=presented_fix(self.state, sensitive=bool(contract.sensitive)))

    @cached_property
    def run(self) -> FixRun:
        self.loaded.require_rows("Fixing the table")
        self.progress(10, "Applying the fix ...")
        return self.runs.run(self.fix_state, lambda index, text: self.progress(10, f"Step {index + 1}: {text}"))

    @cached_property
    def attacks(self) -> tuple[AttackOutcome, AttackOutcome]:
        self.progress(40, "Attacking the table as it is ...")
        before = attack_state(self.services, self.fix_state.updated(fix=()))
        self.progress(65, "Attacking the fixed release ...")
        after = attack_state(self.services, self.fix_state)
        return before, after

    def words(self, text: str) -> str:
        """``text`` said of people when the diagnosis counts people (a person-id column)."""
        return in_people(text) if self.people else text

    def quick(self, key: str) -> bool:
        """Whether slide ``key`` is computed at once (else in the background)."""
        if key in _ALWAYS_SLOW or not self.services.diagnosis_ready(self.state):
            return False
        if key == "unique":
            return (
                self.loaded.source is None
                and len(self.loaded.frame) * 2 ** len(self.state.quasi_identifiers) <= QUICK_UNIQUES
            )
        return True


# --- the slides --------------------------------------------------------------------------------------------------


def _texts(values: pd.Series) -> list[str]:
    present = values.notna().to_numpy()
    out = ["—"] * len(values)
    if present.any():
        shown = [_short(str(v)) for v in canonical_text(pd.Index(values[present]))]
        for position, text in zip(present.nonzero()[0].tolist(), shown, strict=True):
            out[position] = text
    return out


def _listed(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _joined(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _short(text: str) -> str:
    """A number written with many decimals (a microaggregated mean) rounded to two; other text as it is."""
    whole, dot, decimals = text.partition(".")
    if dot and len(decimals) > 3 and decimals.isdigit() and whole.lstrip("-").isdigit():
        return fmt_number(float(text), 2)
    return text


def _cell(value: Any) -> str:
    """A sample's cell as text: missing as a dash."""
    if value is None or (isinstance(value, float) and value != value) or str(value) in ("nan", "NaN", "None"):
        return "—"
    return _short(str(value))


def _table_slide(ctx: _Context) -> Slide:
    loaded, state = ctx.loaded, ctx.state
    qis, sensitive = list(state.quasi_identifiers), list(state.sensitive)
    shown = [name for name in dict.fromkeys([*qis, *sensitive]) if name in loaded.frame.columns][:SAMPLE_COLUMNS]
    count: int | None
    try:  # the records in scope (people, with a person id); without quasi-identifiers, the rows
        count, unit = ctx.diagnosis.n_records, "people" if ctx.people else "records"
    except PrivdashError:
        count, unit = (len(loaded.frame) if loaded.source is None else None), "rows"
    headline = f"{fmt_count(count)} {unit}, {len(loaded.columns)} columns"
    detail = f"An attacker may know {_listed(qis)}." if qis else "No column is marked as a quasi-identifier."
    if sensitive:
        detail += f" Sensitive: {_listed(sensitive)}."
    table = None
    if shown:
        head = loaded.frame[shown].head(SAMPLE_ROWS)
        columns = [_texts(head[name]) for name in shown]
        table = SlideTable(
            f"The first {len(head)} records" + (" of the preview" if loaded.source is not None else ""),
            tuple(shown),
            tuple(zip(*columns, strict=True)),
            tuple(pd.api.types.is_numeric_dtype(head[name]) for name in shown),
        )
    return Slide("table", SLIDE_TITLES["table"], headline, detail, table=table)


def _unique_slide(ctx: _Context) -> Slide:
    diagnosis, state = ctx.diagnosis, ctx.state
    n, uniques = diagnosis.n_records, diagnosis.sample_uniques
    qis = list(diagnosis.classes.quasi_identifiers) or list(state.quasi_identifiers)
    title = SLIDE_TITLES["unique"]
    if not uniques:
        detail = (
            f"The smallest group of records that share their values on {_listed(qis)} holds {fmt_count(diagnosis.k)}."
        )
        return Slide("unique", title, ctx.words("No record is unique"), ctx.words(detail))
    headline = ctx.words(f"{fmt_count(uniques)} of {fmt_count(n)} records {'is' if uniques == 1 else 'are'} unique")
    base = f"Nobody else shares their values on {_listed(qis)} ({fmt_rate(uniques / n if n else 0.0)})."
    if ctx.people:
        return Slide("unique", title, headline, ctx.words(base) + " Combinations are not analysed for people.")
    if ctx.loaded.source is not None:
        return Slide("unique", title, headline, base + " Combinations are not analysed for a server-side source.")
    ctx.progress(5, "Finding the smallest combinations that single out each unique record ...")
    policy = MissingPolicy.VALUE if state.missing == MissingPolicy.WILDCARD else state.missing
    try:
        msus = minimal_sample_uniques(ctx.loaded.frame, list(state.quasi_identifiers), missing=policy)
    except PrivdashError as exc:
        return Slide("unique", title, headline, f"{base} The combinations were not analysed: {exc}")
    counts: dict[tuple[str, ...], int] = {}
    for names in msus.msus["quasi_identifiers"].tolist():
        counts[tuple(names)] = counts.get(tuple(names), 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], len(item[0]), item[0]))[:TOP_COMBINATIONS]
    if ranked:
        names, records = ranked[0]
        alone = "alone " if len(names) == 1 else ""
        detail = (
            f"{base} Why: {' + '.join(names)} {alone}singles out {fmt_count(records)} of them "
            f"({fmt_rate(records / uniques)})."
        )
    else:
        detail = base
    table = SlideTable(
        "The smallest combinations of quasi-identifiers that single records out (a record may have several)",
        ("Combination", "Unique records"),
        tuple((" + ".join(names), fmt_count(count)) for names, count in ranked),
        (False, True),
    )
    return Slide("unique", title, headline, detail, table=table if ranked else None)


_TARGET_LABELS = {
    "k": "k-anonymity",
    "l": "l-diversity",
    "t": "t-closeness",
    "max_risk": "Highest risk",
    "global_risk": "Global risk",
    "household_risk": "Household risk",
    "average_risk": "Average risk",
    "k_map": "k-map",
    "delta_presence": "δ-presence",
    "population_uniques": "Population uniques",
}
#: Targets as a sentence names them.
_TARGET_WORDS = {
    **{key: label[0].lower() + label[1:] for key, label in _TARGET_LABELS.items()},
    "max_risk": "the highest risk",
}
_AT_LEAST = frozenset({"k", "l", "k_map"})


def _check_value(target: str, value: float) -> str:
    if value != value:  # NaN: not measured
        return "not measured"
    if target in ("k", "k_map"):
        return fmt_number(value)
    if target in ("l", "t"):
        return fmt_number(value, 2)
    return fmt_share(value, 1)


def _check_row(check: TargetCheck) -> tuple[str, str, str, str]:
    sign = "≥" if check.target in _AT_LEAST else "≤"
    label = _TARGET_LABELS.get(check.target, check.target)
    if check.attribute:
        label += f" ({check.attribute})"
    return (
        label,
        f"{sign} {_check_value(check.target, check.required)}",
        _check_value(check.target, check.achieved),
        "✓ pass" if check.passed else "✗ fail",
    )


def _verdict_slide(ctx: _Context) -> Slide:
    verdict = release_verdict(ctx.diagnosis, ctx.state)
    n = verdict.records
    if verdict.passed:
        headline, detail = "Meets every target", f"Every one of the {fmt_count(n)} records is in a large enough group."
    else:
        headline = "Not safe to release"
        failed = _joined([_TARGET_WORDS.get(check.target, check.target) for check in verdict.failed])
        detail = (
            f"{fmt_count(verdict.records_at_risk)} of {fmt_count(n)} records "
            f"({fmt_rate(verdict.records_at_risk / n if n else 0.0)}) are at risk: the table fails {failed}."
        )
    table = SlideTable(
        "Each target against the measured value",
        ("Target", "Required", "Measured", "Result"),
        tuple(_check_row(check) for check in verdict.checks),
        (False, True, True, False),
    )
    return Slide("verdict", SLIDE_TITLES["verdict"], headline, ctx.words(detail), verdict.passed, table)


def _pairs(before: Sequence[Headline], after: Sequence[Headline]) -> tuple[tuple[str, str, str], ...]:
    later = {item.key: item for item in after}
    return tuple(
        (item.label, item.value, later[item.key].value) for item in before if item.key in later and item.value != "-"
    )


def _fix_slide(ctx: _Context) -> Slide:
    title = SLIDE_TITLES["fix"]
    run = ctx.run
    if run.error:
        return Slide("fix", title, "The fix could not be applied", run.error, False, error=True)
    ctx.progress(30, "Diagnosing the fixed table ...")
    after = ctx.runs.fixed_diagnosis(run, ctx.fix_state)
    verdict = release_verdict(after, ctx.fix_state)
    sentence = cheapest_fix(run)
    if sentence is None:
        steps = [
            f"{describe_spec(spec)}: {describe_result(spec, result)}"
            for spec, result in zip(run.specs, run.results, strict=True)
        ]
        sentence = "The fix: " + "; ".join(steps) + "."
    headline = "After the fix: meets every target" if verdict.passed else "After the fix: still not safe"
    rows = (
        *_pairs(fix_headlines(ctx.diagnosis, ctx.state), fix_headlines(after, ctx.fix_state)),
        ("Records released", fmt_count(len(run.original)), fmt_count(len(run.data))),
    )
    table = SlideTable(
        "The headline numbers before and after the fix", ("", "Before", "After"), rows, (False, True, True)
    )
    return Slide("fix", title, headline, ctx.words(sentence), verdict.passed, table)


def _attack_slide(ctx: _Context) -> Slide:
    title = SLIDE_TITLES["attack"]
    if ctx.run.error:
        return Slide("attack", title, "No release to attack", ctx.run.error, error=True)
    before, after = ctx.attacks
    labels = tuple(row.label for row in after.rows)
    earlier = {row.key: row for row in before.rows}
    rates_before = tuple(earlier[row.key].result.targets.rate for row in after.rows)
    rates_after = tuple(row.result.targets.rate for row in after.rows)
    link_before, link_after = rates_before[0], rates_after[0]
    qis = after.report.quasi_identifiers
    headline = f"Linkage {fmt_rate(link_before)} → {fmt_rate(link_after)}"
    detail = (
        f"An attacker who knows {_listed(list(qis))} finds a person's record {fmt_rate(link_before)} of the time "
        f"in the table as it is, and {fmt_rate(link_after)} in the fixed release (measured on "
        f"{fmt_count(after.report.rows_original)} targets)."
    )
    bars = SlideBars(
        "Success of each attack before and after the fix (share of the targets)",
        labels,
        ("Before", "After"),
        (rates_before, rates_after),
        (tuple(fmt_rate(v) for v in rates_before), tuple(fmt_rate(v) for v in rates_after)),
    )
    return Slide("attack", title, headline, detail, bars=bars)


def _sample_slide(ctx: _Context) -> Slide:
    title = SLIDE_TITLES["sample"]
    run = ctx.run
    if run.error:
        return Slide("sample", title, "Nothing is released", run.error, error=True)
    ctx.progress(90, "Picking a few released records ...")
    sample = row_sample(run, size=SAMPLE_ROWS, columns=SAMPLE_COLUMNS)
    names = list(sample.before.columns)
    rows = []
    for position, removed in zip(range(len(sample.before)), sample.suppressed.tolist(), strict=True):
        cells = []
        for name in names:
            old, new = sample.before.iloc[position][name], sample.after.iloc[position][name]
            old_text = _cell(old)
            if removed:
                cells.append(old_text)
            elif bool(sample.changed.iloc[position][name]):
                cells.append(f"{old_text} → {_cell(new)}")
            else:
                cells.append(old_text)
        rows.append((*cells, "removed" if removed else ("changed" if any("→" in c for c in cells) else "as is")))
    removed_count = run.rows_removed
    headline = ctx.words(f"{fmt_count(len(run.data))} records released")
    detail = ctx.words(
        (f"{fmt_count(removed_count)} records removed. " if removed_count else "No record removed. ")
        + "Each changed cell reads original → released."
    )
    table = SlideTable(
        "A few records before and after the fix",
        (*names, "Record"),
        tuple(rows),
        (*(False for _ in names), False),
    )
    return Slide("sample", title, headline, detail, table=table)


_BUILDERS: dict[str, Callable[[_Context], Slide]] = {
    "table": _table_slide,
    "unique": _unique_slide,
    "verdict": _verdict_slide,
    "fix": _fix_slide,
    "attack": _attack_slide,
    "sample": _sample_slide,
}


def _build(ctx: _Context, key: str) -> Slide:
    try:
        return _BUILDERS[key](ctx)
    except PrivdashError as exc:
        return Slide(key, SLIDE_TITLES[key], "This part of the story cannot be shown", str(exc), error=True)


# --- decks -------------------------------------------------------------------------------------------------------


def _folder(services: Services) -> Path:
    return Path(services.settings.cache_dir) / "presenter"


def _disk(services: Services) -> diskcache.Cache:
    return disk_cache(_folder(services))


def _deck_key(ctx: _Context) -> str:
    """The sha256 of what the slow slides depend on: the dataset and its version, the view state with the fix it
    presents, and the fingerprint of the pseudonymization key (a fix may pseudonymize; never the key)."""
    try:
        fingerprint = key_fingerprint(ctx.services.settings.pseudonym_key or "")
    except PrivdashError:
        fingerprint = None
    parts = [ctx.loaded.id, ctx.loaded.version, ctx.fix_state.to_dict(), fingerprint]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _story(services: Services, loaded: LoadedDataset) -> str | None:
    if not loaded.is_demo:
        return None
    demo = demo_datasets(services.settings.data_dir).get(loaded.id.split(":", 1)[1])
    return demo.description if demo is not None else None


def deck(services: Services, state: ViewState) -> Deck:
    """The deck of ``state``'s dataset: the quick slides computed, the slow ones read from the disk cache or
    ``pending`` (:func:`compute_slow` computes them). Raises ``PrivdashError`` when no dataset is open or it cannot
    be loaded; a slide that cannot be computed (no quasi-identifier, a fix step that fails) says why."""
    ctx = _Context(services, state, None)
    slides = []
    stored: Mapping[str, Slide] | None = None
    for key in SLIDE_KEYS:
        if ctx.quick(key):
            slides.append(_build(ctx, key))
            continue
        if stored is None:
            stored = _stored(ctx)
        slides.append(stored.get(key) or Slide(key, SLIDE_TITLES[key], pending=True))
    return Deck(ctx.loaded.title, _story(services, ctx.loaded), ctx.fix_state, tuple(slides))


def _stored(ctx: _Context) -> dict[str, Slide]:
    try:
        key = _deck_key(ctx)
    except PrivdashError:
        return {}
    found = _disk(ctx.services).get(key)
    return dict(found) if isinstance(found, dict) else {}


def compute_slow(services: Services, state: ViewState, progress: Callable[[int, str], None] | None = None) -> Deck:
    """The deck of ``state`` with every slide computed; the slow ones are kept on disk for :func:`deck`.
    ``progress(percent, text)`` reports each stage."""
    report = progress or (lambda _percent, _text: None)
    ctx = _Context(services, state, report)
    slides = [_build(ctx, key) for key in SLIDE_KEYS]
    slow = {slide.key: slide for slide in slides if not ctx.quick(slide.key)}
    with contextlib.suppress(PrivdashError):
        _disk(services).set(_deck_key(ctx), slow, expire=services.settings.store_ttl)
    report(100, "Done")
    return Deck(ctx.loaded.title, _story(services, ctx.loaded), ctx.fix_state, tuple(slides))
