"""Validation and encoding shared by the attacks: domain codes of the original and control records, and the
group of every released value (see :mod:`dashboard.core.attack.matching`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, cast

import numpy as np
import pandas as pd

from dashboard.core.attack.matching import ColumnCoverage, ReleasedIndex, column_coverage
from dashboard.core.errors import ColumnError, DataReadError, ParameterError, check_columns, check_positive_int
from dashboard.core.transform.hierarchy import Hierarchy
from dashboard.core.transform.steps import Recipe

__all__ = ["AttackSetup", "prepare", "recipe_knowledge"]


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
) -> tuple[dict[str, Hierarchy], dict[str, tuple[float | None, float | None]]]:
    """What a recipe tells the attacker: the hierarchy of every generalized column and the top/bottom codes."""
    hierarchies: dict[str, Hierarchy] = {}
    codes: dict[str, tuple[float | None, float | None]] = {}
    for step in recipe.steps:
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
    return hierarchies, codes


def _check_table(table: Any, name: str) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"The {name} table must be a pandas DataFrame, got {type(table).__name__}.")
    if not len(table) or not len(table.columns):
        raise DataReadError(f"The {name} table is empty: it needs at least one row and one column.")
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
) -> AttackSetup:
    """Validate the inputs and encode them (raises :class:`~dashboard.core.errors.PrivdashError` subclasses)."""
    original = _check_table(original, "original")
    released = _check_table(released, "released")
    if n_targets is not None:
        n_targets = check_positive_int(n_targets, "The number of targets")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ParameterError(f"The seed must be a whole number >= 0, got {seed!r}.")
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
    if recipe is not None:
        from_recipe, top_bottom = recipe_knowledge(recipe, original)
        known = {**from_recipe, **known}
    coverages = []
    original_codes, control_codes, released_groups, released_raw = [], [], [], []
    for column in columns:
        sources = [original[column]] + ([control[column]] if control is not None else [])
        coverage, codes, groups = column_coverage(
            column, sources, released[column], hierarchy=known.get(column), top_bottom=top_bottom.get(column)
        )
        coverages.append(coverage)
        original_codes.append(codes[0])
        if control is not None:
            control_codes.append(codes[1])
        released_groups.append(groups)
        raw, _ = pd.factorize(released[column].reset_index(drop=True), use_na_sentinel=False)
        released_raw.append(raw)
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
