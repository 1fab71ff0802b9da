"""Validation and encoding shared by the attacks: domain codes of the original and control records, and the
group of every released value (see :mod:`privdash.attack.matching`).

A released value that matches no original value (a hierarchy label without its hierarchy, a category the original
never had) would make every attack reading its column fail on the records that hold it, and report a rate near 0%
that measures nothing. :func:`prepare` therefore refuses such a release with :class:`UnmatchedValuesError`, naming
the columns and values, unless the caller declares that those values stand for no one (``allow_unmatched``: a
synthetic release whose new categories describe nobody); the linkage attack reads every released column, singling
out the quasi-identifiers, inference the quasi-identifiers and the sensitive attribute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, cast

import numpy as np
import pandas as pd

from privdash.attack.matching import ColumnCoverage, ReleasedIndex, column_coverage
from privdash.errors import (
    ColumnError,
    DataReadError,
    ParameterError,
    check_columns,
    check_positive_int,
    format_values,
)
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.steps import Recipe

__all__ = ["AttackSetup", "UnmatchedValuesError", "prepare", "recipe_knowledge"]

#: Seeds are reported in the JSON output, whose readers expect 64-bit integers.
_MAX_SEED = 2**63 - 1


class UnmatchedValuesError(ColumnError):
    """Released values match no original value, so the attacks reading their columns cannot be measured.

    Attributes
    ----------
    unmatched
        Column -> ``(number of distinct unmatched values, the first few of them)``.
    """

    def __init__(self, message: str, unmatched: Mapping[str, tuple[int, tuple[str, ...]]]) -> None:
        super().__init__(message)
        self.unmatched = dict(unmatched)

    def __reduce__(self) -> tuple[object, ...]:
        # Errors may cross process boundaries (background jobs): keep the columns.
        return (UnmatchedValuesError, (str(self), self.unmatched))

    @property
    def listing(self) -> str:
        """``'education' (3 values: 'Higher education', ...)`` for each column, for messages."""
        return "; ".join(
            f"'{column}' ({count:,} value{'s' if count != 1 else ''}: {format_values(list(values), 3)})"
            for column, (count, values) in self.unmatched.items()
        )


@dataclass(frozen=True, eq=False)
class AttackSetup:
    """The tables of an attack, encoded.

    ``columns`` are the released columns, quasi-identifiers first, then the sensitive attribute, then the rest;
    ``original`` and ``control`` hold the domain code of each of their values in that order and ``released`` the
    group of each released value. ``targets`` and ``control_targets`` are the rows attacked.
    """

    quasi_identifiers: tuple[str, ...]
    sensitive: str | None
    columns: tuple[str, ...]
    coverages: tuple[ColumnCoverage, ...]
    original: np.ndarray
    control: np.ndarray | None
    released: np.ndarray
    released_raw: np.ndarray
    targets: np.ndarray
    control_targets: np.ndarray | None
    n_targets: int | None
    seed: int

    @property
    def qi_positions(self) -> list[int]:
        return list(range(len(self.quasi_identifiers)))

    @property
    def sensitive_position(self) -> int:
        return len(self.quasi_identifiers)

    def qi_index(self, released: np.ndarray | None = None) -> ReleasedIndex:
        """The released records (or ``released`` groups) indexed on the quasi-identifiers."""
        groups = self.released if released is None else released
        width = len(self.quasi_identifiers)
        return ReleasedIndex.build(self.coverages[:width], groups[:, :width])

    def rng(self, stream: int) -> np.random.Generator:
        """An independent random stream per use, reproducible from the seed."""
        return np.random.default_rng([self.seed, stream])


def recipe_knowledge(
    recipe: Recipe, original: pd.DataFrame
) -> tuple[dict[str, Hierarchy], dict[str, tuple[float | None, float | None]], set[str]]:
    """What a recipe tells the attacker: the hierarchy of every generalized column, the top/bottom codes, and the
    pseudonymized columns (whose values stand for any original value without the key)."""
    hierarchies: dict[str, Hierarchy] = {}
    codes: dict[str, tuple[float | None, float | None]] = {}
    pseudonyms: set[str] = set()
    for step in recipe.steps:
        if step.kind == "pseudonymize":
            pseudonyms.update(str(column) for column in step.params.get("columns", ()))
        if step.kind == "generalize":
            for column, spec in dict(step.params.get("columns", {})).items():
                if column in original.columns and isinstance(spec, Mapping) and "hierarchy" in spec:
                    hierarchies[column] = Hierarchy.from_dict(spec["hierarchy"], cast(pd.Series, original[column]))
        elif step.kind == "top_bottom_coding" and step.params.get("replacement", "value") != "label":
            column = str(step.params.get("column"))
            top, bottom = step.params.get("top"), step.params.get("bottom")
            codes[column] = (
                None if bottom is None else float(bottom),
                None if top is None else float(top),
            )
    return hierarchies, codes, pseudonyms


def _check_table(table: Any, name: str) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"The {name} table must be a pandas DataFrame, got {type(table).__name__}.")
    if not len(table) or not len(table.columns):
        raise DataReadError(f"The {name} table is empty: it needs at least one row and one column.")
    names = [str(c) for c in table.columns]
    twice = sorted({c for c in names if names.count(c) > 1})
    if twice:
        raise ColumnError(
            f"The {name} table has several columns named {format_values(twice)}: a column must be named once."
        )
    return table


def _sample(rng: np.random.Generator, n: int, wanted: int | None) -> np.ndarray:
    if wanted is None or wanted >= n:
        return np.arange(n, dtype=np.int64)
    return np.sort(rng.choice(n, size=wanted, replace=False)).astype(np.int64)


def prepare(
    original: pd.DataFrame,
    released: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    sensitive: str | None = None,
    control: pd.DataFrame | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    recipe: Recipe | None = None,
    n_targets: int | None = None,
    seed: int = 0,
    allow_unmatched: bool = False,
) -> AttackSetup:
    """Validate the inputs and encode them (raises :class:`~privdash.errors.PrivdashError` subclasses;
    :class:`UnmatchedValuesError` for released values that match no original value, unless ``allow_unmatched``
    declares that they stand for no one)."""
    original = _check_table(original, "original")
    released = _check_table(released, "released")
    if n_targets is not None:
        n_targets = check_positive_int(n_targets, "The number of targets")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed <= _MAX_SEED:
        shown = f"{seed!r}" if not isinstance(seed, int) or abs(seed) < 10**30 else "a larger number"
        raise ParameterError(f"The seed must be a whole number from 0 to {_MAX_SEED:,}, got {shown}.")
    extra = [str(c) for c in released.columns if c not in original.columns]
    if extra:
        hints = []
        for name in extra:
            close = get_close_matches(name, [str(c) for c in original.columns], n=1)
            hints.append(f"'{name}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise ColumnError(
            f"The released table has columns the original does not: {', '.join(hints)}. Attack a release of the "
            "same table (rename or drop those columns)."
        )
    qis = check_columns(original, quasi_identifiers, role="quasi-identifier")
    check_columns(released, qis, role="quasi-identifier of the released table")
    if sensitive is not None:
        check_columns(original, [sensitive], role="sensitive attribute")
        check_columns(released, [sensitive], role="sensitive attribute of the released table")
        if sensitive in qis:
            raise ColumnError(f"'{sensitive}' cannot be both a quasi-identifier and the sensitive attribute.")
    head = [*qis, *([sensitive] if sensitive is not None else [])]
    columns = tuple(head + [str(c) for c in released.columns if c not in head])
    if control is not None:
        control = _check_table(control, "control")
        check_columns(control, columns, role="column of the control table")
    known = dict(hierarchies or {})
    top_bottom: dict[str, tuple[float | None, float | None]] = {}
    pseudonyms: set[str] = set()
    if recipe is not None:
        from_recipe, top_bottom, pseudonyms = recipe_knowledge(recipe, original)
        known = {**from_recipe, **known}
    coverages = []
    original_codes, control_codes, released_groups, released_raw = [], [], [], []
    for column in columns:
        sources = [original[column]] + ([control[column]] if control is not None else [])
        try:
            coverage, codes, groups = column_coverage(
                column,
                sources,
                released[column],
                hierarchy=known.get(column),
                top_bottom=top_bottom.get(column),
                wildcard=column in pseudonyms,
            )
        except TypeError as exc:  # unhashable cells (lists, dicts) from a Python caller
            raise ParameterError(
                f"Column '{column}' holds values that cannot be compared as values ({exc}): give plain values "
                "(text, numbers, dates)."
            ) from None
        coverages.append(coverage)
        original_codes.append(codes[0])
        if control is not None:
            control_codes.append(codes[1])
        released_groups.append(groups)
        raw, _ = pd.factorize(released[column].reset_index(drop=True), use_na_sentinel=False)
        released_raw.append(raw)
    unmatched = {c.name: (c.unmatched, c.unmatched_values) for c in coverages if c.unmatched}
    if unmatched and not allow_unmatched:
        error = UnmatchedValuesError("", unmatched)
        raise UnmatchedValuesError(
            f"Released values match no original value, so the attacks cannot be measured (they would report a "
            f"success near 0% that measures nothing): {error.listing}. Give the attacker the hierarchies or the "
            "recipe that made these labels, or, if they are new values that stand for no one (a synthetic release), "
            "allow unmatched values.",
            unmatched,
        )
    rng = np.random.default_rng([seed, 0])
    return AttackSetup(
        quasi_identifiers=qis,
        sensitive=sensitive,
        columns=columns,
        coverages=tuple(coverages),
        original=np.column_stack(original_codes),
        control=np.column_stack(control_codes) if control is not None else None,
        released=np.column_stack(released_groups),
        released_raw=np.column_stack(released_raw).astype(np.int64),
        targets=_sample(rng, len(original), n_targets),
        control_targets=_sample(rng, len(control), n_targets) if control is not None else None,
        n_targets=n_targets,
        seed=int(seed),
    )
