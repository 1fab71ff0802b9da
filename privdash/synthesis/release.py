"""Synthetic releases: partially, fully and hybrid synthetic tables by sequential CART, and DP synthetic tables by
MST. Definitions: docs/synthesis.md.

- **partial**: the values of the chosen columns (default: the quasi-identifiers) of the chosen records (the records
  at risk, in equivalence classes of fewer than ``k`` records over the quasi-identifiers, or all records) are drawn
  from the model; every other value is the original one.
- **full**: every value of the modelled columns is drawn; the table has the same columns, dtypes and row count.
- **hybrid**: a fully synthetic table is drawn, and a share of the original records, at positions chosen at
  random, is replaced by the synthetic records at the same positions.
- **dp**: MST (:mod:`privdash.synthesis.mst`), differentially private; the release carries its (ε, δ) cost.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from privdash.constants import SYNTHESIS_METHODS
from privdash.errors import (
    ParameterError,
    check_columns,
    check_finite,
    check_fraction,
    check_positive_int,
)

if TYPE_CHECKING:
    from privdash.dp.mechanisms import PrivacyBudget

__all__ = [
    "ROW_CHOICES",
    "SYNTHESIS_METHODS",
    "SynthesisSettings",
    "SyntheticRelease",
    "minimum_rows",
    "split_control",
    "synthesize",
]

#: Which records a partial synthesis replaces: those at risk (class size < k over the QIs) or all.
ROW_CHOICES = ("at_risk", "all")

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class SynthesisSettings:
    """How a synthetic table is made (docs/synthesis.md).

    ``columns``: partial: the columns whose values are replaced (default: the quasi-identifiers); full, hybrid and
    dp: the columns modelled and released (default: every column). ``rows`` and ``k``: partial: the records
    replaced, ``at_risk`` (in classes of fewer than ``k`` records over the quasi-identifiers) or ``all``. ``share``:
    hybrid, the share of records replaced, in (0, 1]. ``epsilon``, ``delta``, ``bounds``, ``bins``: dp, the total
    cost, the declared range of each numeric column and its number of equal-width bins; ``domains``: dp, the
    declared categories of text columns (the others are chosen by DP key selection). ``min_leaf``: CART's
    minimum number of records in a leaf. ``seed``: ``None`` draws one; the release records the seed used.
    ``entity``: the person-id column of a table where a person may have several rows; it is never modelled (a
    synthetic record is no one's row), and a dp release keeps at most ``max_rows_per_person`` (c) rows of each
    person and calibrates every measurement at c rows (:mod:`privdash.dp.contributions`).
    """

    method: str
    columns: tuple[str, ...] | None = None
    rows: str = "at_risk"
    k: int = 5
    share: float = 0.5
    epsilon: float | None = None
    delta: float = 1e-6
    bounds: Mapping[str, tuple[float, float]] | None = None
    bins: int = 20
    min_leaf: int = 5
    seed: int | None = None
    domains: Mapping[str, Sequence[Any]] | None = field(default=None, compare=False)
    entity: str | None = None
    max_rows_per_person: int | None = None

    def __post_init__(self) -> None:
        if self.method not in SYNTHESIS_METHODS:
            raise ParameterError(
                f"Unknown synthesis method {self.method!r}: choose one of {', '.join(SYNTHESIS_METHODS)}."
            )
        if self.columns is not None:
            if isinstance(self.columns, str):
                raise ParameterError("columns must be a list of column names, not one string.")
            object.__setattr__(self, "columns", tuple(str(c) for c in self.columns))
        if self.rows not in ROW_CHOICES:
            raise ParameterError(f"rows must be one of {', '.join(ROW_CHOICES)}, got {self.rows!r}.")
        object.__setattr__(self, "k", check_positive_int(self.k, "k", minimum=2))
        object.__setattr__(
            self, "share", check_fraction(self.share, "share (of records replaced)", inclusive_zero=False)
        )
        object.__setattr__(self, "min_leaf", check_positive_int(self.min_leaf, "min_leaf"))
        object.__setattr__(self, "bins", check_positive_int(self.bins, "bins", minimum=2))
        if self.seed is not None:
            seed = check_positive_int(self.seed, "seed", minimum=0)
            object.__setattr__(self, "seed", seed)
        if self.epsilon is not None:
            epsilon = check_finite(self.epsilon, "epsilon")
            if not epsilon > 0:
                raise ParameterError(f"epsilon must be a finite number above 0, got {self.epsilon!r}.")
            object.__setattr__(self, "epsilon", epsilon)
        delta = check_finite(self.delta, "delta")
        if not 0 <= delta < 1:
            raise ParameterError(f"delta must be in [0, 1), got {self.delta!r}.")
        object.__setattr__(self, "delta", delta)
        if self.method == "dp" and self.epsilon is None:
            raise ParameterError("A dp synthetic release needs its total epsilon (--epsilon).")
        if self.max_rows_per_person is not None:
            from privdash.dp.contributions import check_max_rows

            object.__setattr__(self, "max_rows_per_person", check_max_rows(self.max_rows_per_person))
            if self.entity is None:
                raise ParameterError(
                    "A bound on rows per person needs the person-id column (entity) whose rows it counts."
                )
        if self.method == "dp" and self.entity is not None and self.max_rows_per_person is None:
            raise ParameterError(
                f"A person may have several rows ('{self.entity}'): a dp synthetic release needs the bound on rows "
                "per person (--max-rows-per-person); each person's rows are truncated to it and every measurement is "
                "calibrated at that many rows."
            )
        if self.bounds is not None:
            checked: dict[str, tuple[float, float]] = {}
            for name, pair in dict(self.bounds).items():
                try:
                    low, high = (float(v) for v in pair)
                except (TypeError, ValueError):
                    raise ParameterError(f"The bounds of {name} must be two numbers LOW:HIGH, got {pair!r}.") from None
                if not (math.isfinite(low) and math.isfinite(high) and low < high):
                    raise ParameterError(f"The bounds of {name} must be finite with LOW < HIGH, got {pair!r}.")
                checked[str(name)] = (low, high)
            object.__setattr__(self, "bounds", checked)

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready values (a recipe step's parameters)."""
        values: dict[str, Any] = {
            "method": self.method,
            "columns": list(self.columns) if self.columns is not None else None,
            "rows": self.rows,
            "k": self.k,
            "share": self.share,
            "min_leaf": self.min_leaf,
            "seed": self.seed,
        }
        if self.entity is not None:
            values.update(entity=self.entity, max_rows_per_person=self.max_rows_per_person)
        if self.method == "dp":
            values.update(
                epsilon=self.epsilon,
                delta=self.delta,
                bins=self.bins,
                bounds={k: list(v) for k, v in (self.bounds or {}).items()},
            )
            if self.domains:
                values["domains"] = {k: [str(x) for x in v] for k, v in self.domains.items()}
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SynthesisSettings:
        """Settings from :meth:`to_dict`'s values; :class:`ParameterError` names an unknown key."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ParameterError(
                f"Unknown synthesis setting(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}."
            )
        data = dict(values)
        if data.get("columns") is not None:
            data["columns"] = tuple(data["columns"])
        if data.get("bounds") is not None:
            data["bounds"] = {k: tuple(v) for k, v in data["bounds"].items()}
        if "method" not in data:
            raise ParameterError("A synthesis step needs its method.")
        return cls(**data)


@dataclass(frozen=True, eq=False)
class SyntheticRelease:
    """A synthetic table and how it was made.

    ``table``: same columns (the modelled ones) and dtypes as the input. ``settings``: with the seed used.
    ``rows_replaced``: records with at least one drawn value. ``cells_replaced``: values drawn from the model (a
    drawn value may equal the original by chance). ``privacy``: the (ε, δ) cost (dp only). ``model``: one line.
    """

    table: pd.DataFrame
    settings: SynthesisSettings
    rows_replaced: int
    cells_replaced: int
    privacy: PrivacyBudget | None
    model: str
    seconds: float


def minimum_rows(min_leaf: int) -> int:
    """The fewest records a CART model is fitted on: two leaves of ``min_leaf`` records, and at least 10."""
    return max(10, 2 * min_leaf)


def _check_size(table: pd.DataFrame, settings: SynthesisSettings) -> None:
    needed = minimum_rows(settings.min_leaf)
    if len(table) < needed:
        raise ParameterError(
            f"The table has {len(table)} record(s): a synthetic model with min leaf {settings.min_leaf} needs at "
            f"least {needed} records to learn from."
        )


def _records_at_risk(table: pd.DataFrame, qis: tuple[str, ...], k: int) -> np.ndarray:
    """Positions of the records in equivalence classes of fewer than ``k`` records (a missing value is a value)."""
    groups = table.groupby(list(qis), dropna=False, sort=False).ngroup().to_numpy()
    sizes = np.bincount(groups)[groups]
    return np.flatnonzero(sizes < k)


def _assemble(table: pd.DataFrame, columns: Sequence[str], donors: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The synthetic records: each column's values taken from the donor positions (original dtypes kept)."""
    parts = {c: table[c].iloc[donors[c]].reset_index(drop=True) for c in columns}
    return pd.DataFrame(parts, columns=list(columns))


def _take(series: pd.Series, rows: np.ndarray, donors: np.ndarray) -> pd.Series:
    """``series`` with the values at positions ``rows`` replaced by the values at positions ``donors``."""
    positions = np.arange(len(series))
    positions[rows] = donors
    return series.iloc[positions].set_axis(series.index)


def synthesize(
    table: pd.DataFrame,
    settings: SynthesisSettings,
    *,
    quasi_identifiers: Sequence[str] = (),
    progress: Progress | None = None,
) -> SyntheticRelease:
    """A synthetic version of ``table`` made as ``settings`` say (module docstring, docs/synthesis.md).

    ``quasi_identifiers`` choose the records at risk and the default columns of a partial synthesis. The same
    settings with the same seed give the same table. Bad input raises :class:`~privdash.errors.ParameterError` or
    :class:`~privdash.errors.ColumnError`.
    """
    started = time.perf_counter()
    qis = check_columns(table, quasi_identifiers, role="quasi-identifier", allow_empty=True)
    if settings.columns is not None:
        check_columns(table, settings.columns, role="column to synthesize")
    if table.columns.duplicated().any():
        raise ParameterError("The table has duplicated column names: rename them before synthesizing.")
    entity = settings.entity
    if entity is not None:
        (entity,) = check_columns(table, [entity], role="person-id column")
        if entity in (settings.columns or ()):
            raise ParameterError(
                f"'{entity}' is the person-id column: it is never modelled (a synthetic record is no one's row). "
                "Leave it out of the columns."
            )
    seed = settings.seed if settings.seed is not None else secrets.randbelow(2**31)
    settings = replace(settings, seed=seed)
    rng = np.random.default_rng(seed)
    modelled = settings.columns or tuple(str(c) for c in table.columns if c != entity)
    if settings.method == "dp":
        from privdash.synthesis.mst import mst_synthesize

        people = None
        if entity is not None:
            from privdash.dp.contributions import bound_contributions

            assert settings.max_rows_per_person is not None  # checked by SynthesisSettings
            table, _ = bound_contributions(table, entity, settings.max_rows_per_person, seed=seed)
            people = table[entity]
        synthetic, budget, line = mst_synthesize(
            table[list(modelled)], settings, rng=rng, progress=progress, people=people
        )
        return SyntheticRelease(
            synthetic, settings, len(synthetic), synthetic.size, budget, line, time.perf_counter() - started
        )
    _check_size(table, settings)
    from privdash.synthesis.cart import fit_sample

    if settings.method == "partial":
        replaced = settings.columns if settings.columns is not None else qis
        if not replaced:
            raise ParameterError(
                "A partial synthesis replaces chosen columns: give the columns or the quasi-identifiers."
            )
        constant = [c for c in replaced if table[c].nunique(dropna=False) <= 1]
        if len(constant) == len(replaced):
            raise ParameterError(
                f"The column(s) to replace, {', '.join(constant)}, hold one value only: a synthetic value would be "
                "that value again. Choose columns with more than one value (--columns)."
            )
        if settings.rows == "at_risk":
            if not qis:
                raise ParameterError(
                    "Replacing the records at risk needs the quasi-identifiers (they define the classes of size < k); "
                    "give them, or replace all records."
                )
            rows = _records_at_risk(table, qis, settings.k)
        else:
            rows = np.arange(len(table))
        # The person id is copied as it is but predicts nothing (its codes are arbitrary labels).
        kept = [str(c) for c in table.columns if c not in replaced and c != entity]
        result = table.copy()
        if len(rows) == 0:
            line = f"no record in a class of fewer than {settings.k} records: nothing replaced"
            return SyntheticRelease(result, settings, 0, 0, None, line, time.perf_counter() - started)
        donors, model = fit_sample(
            table, replaced, kept=kept, rows=rows, min_leaf=settings.min_leaf, rng=rng, progress=progress
        )
        for column in replaced:
            result[column] = _take(table[column], rows, donors[column])
        line = f"partial: {len(rows)} record(s) x {len(replaced)} column(s) drawn; " + model.describe(kept)
        return SyntheticRelease(
            result, settings, len(rows), len(rows) * len(replaced), None, line, time.perf_counter() - started
        )
    columns = modelled
    source = table[list(columns)].reset_index(drop=True)
    donors, model = fit_sample(source, columns, min_leaf=settings.min_leaf, rng=rng, progress=progress)
    if settings.method == "full":
        synthetic = _assemble(source, columns, donors)
        line = "full: " + model.describe()
        return SyntheticRelease(
            synthetic, settings, len(synthetic), synthetic.size, None, line, time.perf_counter() - started
        )
    # hybrid
    count = round(settings.share * len(source))
    positions = np.sort(rng.choice(len(source), size=count, replace=False))
    result = source.copy()
    for column in columns:
        result[column] = _take(source[column], positions, donors[column][positions])
    line = f"hybrid: {count} of {len(source)} records replaced by synthetic ones; " + model.describe()
    return SyntheticRelease(result, settings, count, count * len(columns), None, line, time.perf_counter() - started)


def split_control(
    table: pd.DataFrame,
    *,
    share: float = 0.2,
    max_rows: int | None = None,
    seed: int = 0,
    entity: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training, control): ``share`` of the records (at most ``max_rows``), chosen at random with ``seed``, held
    out of the model, so the attacks on the synthetic table have a baseline (records the model never saw). Both
    keep the table's order and index.

    With ``entity`` (the person-id column), whole people are held out: ``share`` of the people, all their rows (at
    most ``max_rows`` people), so that no one is both a target and a control record."""
    share = check_fraction(share, "control share", inclusive_zero=False, inclusive_one=False)
    if entity is not None:
        (entity,) = check_columns(table, [entity], role="person-id column")
        person = pd.factorize(table[entity], use_na_sentinel=False)[0]
        units, what = int(person.max()) + 1 if len(person) else 0, "people"
    else:
        person, units, what = np.arange(len(table)), len(table), "record(s)"
    count = round(share * units)
    if max_rows is not None:
        count = min(count, check_positive_int(max_rows, "max_rows"))
    if count < 1 or count >= units:
        raise ParameterError(
            f"A control share of {share:g} of {units} {what} leaves no control or no training record: "
            "the table needs more records."
        )
    chosen = np.zeros(units, dtype=bool)
    chosen[np.random.default_rng(seed).choice(units, size=count, replace=False)] = True
    held = chosen[person]
    return table.iloc[~held], table.iloc[held]
