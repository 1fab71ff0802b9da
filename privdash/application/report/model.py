"""What a release report holds: the input's fingerprint, the fix applied, and the report itself (:class:`ReleaseReport`)
with the tables derived for display (see :mod:`privdash.application.report`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

import privdash
from privdash.application.report.definitions import DEFINITIONS, Definition
from privdash.data.contract import DataContract
from privdash.errors import PrivdashError
from privdash.measure.classes import MissingPolicy
from privdash.measure.combinations import (
    CombinationRisk,
    MinimalSampleUniques,
)
from privdash.measure.diagnose import Diagnosis
from privdash.measure.risk import RiskCurve
from privdash.measure.verdict import Verdict
from privdash.search.lattice import SearchResult
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.steps import Recipe, TransformResult
from privdash.utility.estimates import EstimateComparison
from privdash.utility.metrics import InformationLoss

if TYPE_CHECKING:
    from privdash.application.report.synthetic import SyntheticSection

__all__ = [
    "AppliedFix",
    "ColumnInfo",
    "Fingerprint",
    "FixSummary",
    "PostcodeUnits",
    "ReleaseReport",
    "file_fingerprint",
    "table_fingerprint",
]


#: Classes listed with their values (the smallest ones of at least k records).
CLASS_ROWS = 8
#: Postcode units listed (smallest census population first).
UNIT_ROWS = 30
#: QI combinations listed (most sample uniques first).
COMBINATION_ROWS = 6
#: Published values shown per generalized column.
EXAMPLES = 4

Progress = Callable[[int, str], None]


# --- inputs ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fingerprint:
    """What identifies the input: its name, ``sha256`` the SHA-256 of the table's content
    (:meth:`~privdash.data.fingerprint.TableFingerprint.of`, the digest the release ledger keys a table by: the same
    rows give the same digest however the file spells or orders them, so the dashboard's report of an uploaded file and
    the command line's report of that file state the same digest), ``hashed`` what ``sha256`` is of, and with a file at
    hand ``file_sha256`` the SHA-256 of its bytes (:func:`~privdash.dp.ledger.file_sha256`), its size in bytes and when
    it was last modified; rows, columns and when the report was made (ISO 8601, UTC)."""

    name: str
    sha256: str
    hashed: str
    size_bytes: int | None
    rows: int
    columns: int
    modified: str | None
    created: str
    file_sha256: str | None = None


#: What the content digest of :class:`Fingerprint` is of.
CONTENT_HASHED = (
    "the table's content: its column names and rows, each cell as text, in any row order (privdash's table "
    "fingerprint, as the release ledger keys tables)"
)


def _now(now: datetime | None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def content_sha256(data: pd.DataFrame) -> str:
    """The SHA-256 of a table's content (:class:`~privdash.data.fingerprint.TableFingerprint`)."""
    from privdash.data.fingerprint import TableFingerprint

    return TableFingerprint.of(data).digest


def file_fingerprint(path: str | os.PathLike[str], data: pd.DataFrame, *, now: datetime | None = None) -> Fingerprint:
    """The fingerprint of a file that was read into ``data``: the SHA-256 of the table's content, as the dashboard
    states it for the same table, and beside it the SHA-256 of the file's bytes (read in blocks)."""
    source = Path(path)
    digest = hashlib.sha256()
    try:
        with source.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        stat = source.stat()
    except OSError as exc:
        raise PrivdashError(f"Cannot read {source.name} to fingerprint it: {exc.strerror or exc}.") from exc
    modified = datetime.fromtimestamp(stat.st_mtime, UTC)
    return Fingerprint(
        name=source.name,
        sha256=content_sha256(data),
        hashed=CONTENT_HASHED,
        size_bytes=int(stat.st_size),
        rows=len(data),
        columns=len(data.columns),
        modified=_now(modified),
        created=_now(now),
        file_sha256=digest.hexdigest(),
    )


def table_fingerprint(name: str, data: pd.DataFrame, *, now: datetime | None = None) -> Fingerprint:
    """The fingerprint of a table whose file is not kept (an upload): the SHA-256 of its content, the digest
    :func:`file_fingerprint` gives for a file holding the same table."""
    return Fingerprint(
        name=name,
        sha256=content_sha256(data),
        hashed=CONTENT_HASHED,
        size_bytes=None,
        rows=len(data),
        columns=len(data.columns),
        modified=None,
        created=_now(now),
    )


@dataclass(frozen=True, eq=False)
class AppliedFix:
    """A fix applied to the input before release.

    Attributes
    ----------
    description
        What was done, in one sentence.
    recipe
        The steps, every parameter resolved (re-applies the fix to data of the same schema).
    data
        The published table.
    kept_rows
        Positions in the input of the published rows (None when every row is kept).
    results
        The core's result of each step.
    hierarchies
        The hierarchy of each generalized quasi-identifier (for the information-loss metrics).
    wildcard
        True after cell suppression: blanked cells stand for any value, so the published classes are formed with
        wildcards.
    search
        The least-lossy search behind the fix, if any.
    contract
        The published table's contract (default: the input's, adapted by
        :func:`~privdash.application.fixes.adapt_contract`).
    """

    description: str
    recipe: Recipe
    data: pd.DataFrame
    kept_rows: np.ndarray | None
    results: tuple[TransformResult, ...]
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)
    wildcard: bool = False
    search: SearchResult | None = None
    contract: DataContract | None = None


# --- the report ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnInfo:
    """One column of the input: its role, its statistical type, and what the release does with it."""

    name: str
    role: str
    type: str
    released: str


@dataclass(frozen=True, eq=False)
class PostcodeUnits:
    """The postcode units of one postcode quasi-identifier of the released table.

    ``units`` lists the units shown (columns ``code``, ``level``, ``records``, ``population`` (census, NaN when not
    known), ``fails`` (population below ``threshold``; NA when not known)), smallest population first, at most
    :data:`UNIT_ROWS`; ``more`` units are left out for length. ``withheld_units`` units (``withheld_records``
    records) have records only in classes smaller than the shown threshold: they are counted, not named.
    ``failing`` counts every unit with a known population under the threshold, withheld ones included.
    """

    column: str
    source: str | None
    threshold: int
    units: pd.DataFrame
    n_units: int
    failing: int
    more: int
    withheld_units: int
    withheld_records: int
    missing_records: int
    #: Every named unit (``code``, ``level``, ``fails``) with its polygon, for the map (None without polygons): the
    #: units of :attr:`units` and those left out for length, never the withheld ones.
    mapped: Any = None
    #: Postcode areas drawn as the map's background (outlines only), or None.
    outline: Any = None


@dataclass(frozen=True, eq=False)
class FixSummary:
    """A fix in the report: what it did, the table before it, and what it cost.

    ``columns`` has one row per quasi-identifier of the input: ``column``, ``change`` (e.g. ``level 3 of 4``),
    ``distinct_before``, ``distinct_after``, ``cells_changed``, ``share_changed`` and ``examples`` (published values
    that may be shown, see the module docstring). ``steps`` are ``(kind, facts)`` pairs (numbers and column names
    only). ``loss_before`` / ``loss_after`` are the information-loss metrics of the input (the baseline) and of the
    published table, or None with ``loss_note`` saying why they are not defined. ``estimates`` are the steward's
    estimates before and after (:mod:`privdash.utility.estimates`), or ``estimates_note`` says why not.
    ``recipe_json`` is the condensed recipe (:func:`~privdash.application.report.build.condensed_recipe`), attached
    to the report as a file; ``recipe_sha256`` the SHA-256 of the whole recipe file as privdash saves it.
    """

    description: str
    recipe: Recipe
    recipe_json: str
    recipe_sha256: str
    before: Diagnosis
    before_verdict: Verdict
    steps: tuple[tuple[str, str], ...]
    columns: pd.DataFrame
    rows_in: int
    rows_out: int
    loss_before: InformationLoss | None
    loss_after: InformationLoss | None
    loss_note: str | None
    estimates: tuple[EstimateComparison, ...] = ()
    estimates_note: str | None = None
    #: With a person id: the people of the input and of the published table (None without).
    people_in: int | None = None
    people_out: int | None = None
    #: The recipe in words: ``(technique, columns, parameters)`` per step
    #: (:func:`~privdash.application.report.build.recipe_steps`).
    recipe_steps: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, eq=False)
class ReleaseReport:
    """Everything the release report shows (see the module docstring).

    Attributes
    ----------
    title
        The report's title (the input's name).
    fingerprint
        The input's fingerprint.
    columns
        Roles and types of the input's columns.
    missing_policy, missing_rule, missing_effect
        The missing-value policy, its rule and what it did to the records with a missing QI value.
    targets, verdict
        The release targets and the core's verdict on the released table.
    diagnosis
        The released table's diagnosis.
    size_bins
        The class-size table for display (:func:`~privdash.application.riskview.size_bins`).
    shown_classes
        The smallest classes of at least ``threshold`` records (QI values, ``size``), at most :data:`CLASS_ROWS`.
    withheld_classes, withheld_records
        Classes smaller than ``threshold`` and their records: counted, never listed.
    threshold
        Classes smaller than this are never shown with values (:func:`shown_threshold`).
    risk_curve
        Records whose prosecutor risk is above each threshold, for the released table.
    combinations, msus, combinations_note
        The QI-combination analysis of the input (None with a note when it could not run).
    postcodes
        One :class:`PostcodeUnits` per postcode quasi-identifier.
    fix
        The fix, if any.
    parameters
        What the report was made with, as ``(name, value)`` pairs (command, options).
    version
        The privdash version.
    people
        With a person id: the sentence saying that every count is of people (None without).
    left_out
        Sections that could not be made (e.g. postcode units with a person id), each with why.
    signoff
        The sign-off fields filled in beforehand (a project's: ``name``, ``role``, ``decision`` one of
        :data:`privdash.application.project.DECISIONS`, ``conditions``, ``date``): printed in the sign-off block,
        whose other lines stay empty for the officer.
    synthetic
        A synthetic release made from the input (:mod:`privdash.application.report.synthetic`), or None.
    """

    title: str
    fingerprint: Fingerprint
    columns: tuple[ColumnInfo, ...]
    missing_policy: MissingPolicy
    missing_rule: str
    missing_effect: str
    targets: PrivacyTargets
    verdict: Verdict
    diagnosis: Diagnosis
    size_bins: pd.DataFrame
    shown_classes: pd.DataFrame
    withheld_classes: int
    withheld_records: int
    threshold: int
    risk_curve: RiskCurve
    combinations: CombinationRisk | None
    msus: MinimalSampleUniques | None
    combinations_note: str | None
    postcodes: tuple[PostcodeUnits, ...]
    fix: FixSummary | None
    parameters: tuple[tuple[str, str], ...]
    version: str = privdash.__version__
    definitions: tuple[Definition, ...] = DEFINITIONS
    people: str | None = None
    left_out: tuple[str, ...] = ()
    signoff: Mapping[str, str] = field(default_factory=dict)
    synthetic: SyntheticSection | None = None

    @property
    def unit(self) -> str:
        """What the counts count: ``people`` with a person id, else ``records``."""
        return "people" if self.diagnosis.entity is not None else "records"

    @property
    def released_rows(self) -> int:
        return self.diagnosis.rows

    def top_combinations(self, limit: int = COMBINATION_ROWS) -> pd.DataFrame:
        """The QI subsets with the most sample uniques (smallest subsets first among equals)."""
        if self.combinations is None:
            return pd.DataFrame()
        table = self.combinations.table
        return table.sort_values(["sample_uniques", "size"], ascending=[False, True], kind="stable").head(limit)
