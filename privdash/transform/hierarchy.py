"""Generalization hierarchies: import and export of ARX's CSV format, builders, and matching data to leaves.

A *hierarchy* maps every original value of a column (a *leaf*, level 0) to ever coarser values at levels
``1 .. n_levels - 1``, e.g. age ``39 -> 35-39 -> 30-39 -> 20-39 -> *``. Generalizing a column to level ``L``
publishes the level-``L`` ancestor of each value (full-domain generalization, Samarati & Sweeney 1998; ARX
``AttributeType.Hierarchy``).

Representation
--------------
:class:`Hierarchy` is encoded once: ``labels[L]`` holds the distinct values at level ``L`` and ``codes[L][i]`` the
position in ``labels[L]`` of the level-``L`` ancestor of leaf ``i``, so generalizing encoded data is one array
lookup. A hierarchy is validated on construction: leaves are unique, all rows have the same number of levels, and
nesting is consistent (a value at level ``L`` has exactly one parent at level ``L + 1``).

ARX CSV format
--------------
One row per leaf, the leaf first and coarser levels to the right, ``;``-separated, no header, standard CSV quoting
(ARX ``Hierarchy.create(path, charset, ';')`` / ``Hierarchy.save``). Values are text.

Matching data values to leaves
------------------------------
Hierarchy files hold text while data columns may be numbers or dates. A data value matches the leaf that is equal
to it; failing that, a number matches the leaf that parses to the same number (age ``39`` matches ``"39"`` and
``"39.0"``); failing that, values match when their canonical text is equal (integral numbers without a decimal
point, dates at midnight as ``YYYY-MM-DD``, surrounding spaces removed). Missing values are never matched: they
stay missing at every level. A value that matches no leaf is an error that lists the uncovered values.

Rule-based hierarchies
----------------------
The builders (:func:`interval_hierarchy`, :func:`date_hierarchy`, :func:`postcode_hierarchy`,
:func:`frequency_hierarchy`, :func:`prefix_hierarchy`, :func:`masking_hierarchy`, :func:`rare_category_hierarchy`)
also record the *rule* they applied, with every parameter resolved (e.g. the cut points a quantile builder chose,
the members of each frequency group). :meth:`Hierarchy.for_values` re-applies the rule to other values, so a saved
recipe generalizes new data with exactly the same mapping; rules saved by older versions (``rare``, ``masking``,
``intervals`` without coding bounds) are still read.

*Rule settings* are what a user writes to ask for a builder (``{"builder": "intervals", "widths": [5, 10]}``);
:func:`build_hierarchy` applies them, and :func:`default_rule` suggests settings for a column of a given statistical
type (:func:`search_hierarchy`: the hierarchy the least-lossy search uses per quasi-identifier). Default hierarchies
keep information: intervals at round widths with the tails coded, frequency groups for categories, prefixes for
structured codes, and never a *pointless* level (:func:`pointless_levels`), one that changes values without
lowering their number.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import heapq
import io
import itertools
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdash.data.contract import StatisticalType
from privdash.errors import ParameterError, check_positive_int, format_values
from privdash.measure.encoding import encode_column

__all__ = [
    "RULE_BUILDERS",
    "RULE_SETTINGS",
    "TOP",
    "Hierarchy",
    "HierarchyError",
    "build_hierarchy",
    "canonical_text",
    "date_hierarchy",
    "default_rule",
    "format_arx_hierarchy",
    "frequency_hierarchy",
    "hierarchy_from_rule",
    "interval_hierarchy",
    "load_hierarchies",
    "looks_like_codes",
    "lookup",
    "masking_hierarchy",
    "nice_width",
    "parse_arx_hierarchy",
    "pointless_levels",
    "postcode_hierarchy",
    "prefix_hierarchy",
    "rare_category_hierarchy",
    "read_arx_hierarchy",
    "search_hierarchy",
    "write_arx_hierarchy",
]

#: The label of the most general level added by the builders (ARX's convention).
TOP = "*"


class HierarchyError(ParameterError):
    """A hierarchy is malformed, or does not cover the values of the column it is applied to."""


# --- the hierarchy -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A validated generalization hierarchy (see the module docstring).

    Attributes
    ----------
    labels
        ``labels[L]``: the distinct values at level ``L``; ``labels[0]`` are the leaves, in file order.
    codes
        ``codes[L][i]``: position in ``labels[L]`` of the level-``L`` ancestor of leaf ``i`` (int64 arrays).
    rule
        How a builder made the hierarchy, with every parameter resolved (JSON values), or None for a hierarchy
        given as a table. :meth:`for_values` rebuilds a rule-based hierarchy over other values.

    Use :meth:`from_rows` (or a reader / builder) to construct one; it validates the table.
    """

    labels: tuple[pd.Index, ...]
    codes: tuple[np.ndarray, ...]
    rule: Mapping[str, Any] | None = field(default=None)

    # -- construction --

    @classmethod
    def from_rows(
        cls, rows: Sequence[Sequence[Any]] | pd.DataFrame | np.ndarray, *, rule: Mapping[str, Any] | None = None
    ) -> Hierarchy:
        """Build and validate a hierarchy from one row per leaf (leaf first, coarser levels to the right).

        Raises :class:`HierarchyError` for an empty table, rows of different lengths, repeated leaves, missing
        cells, or a value with two parents at the next level (the message names the offending values).
        """
        matrix = _as_matrix(rows)
        n_rows, n_levels = matrix.shape
        labels: list[pd.Index] = []
        codes: list[np.ndarray] = []
        for level in range(n_levels):
            column = matrix[:, level]
            level_codes, uniques = pd.factorize(pd.Index(column, dtype=object), sort=False)
            # Missing cells have the code -1; blank text is looked for among the distinct labels only.
            distinct = pd.Series(np.asarray(uniques, dtype=object), dtype=object)
            blank = distinct.astype(str).str.strip().eq("").to_numpy(dtype=bool)  # only text can print as blank
            empty = (level_codes < 0) | np.append(blank, False)[level_codes]
            if empty.any():
                rows_missing = np.flatnonzero(empty)[:5] + 1
                raise HierarchyError(
                    f"The hierarchy has empty cells at level {level} (rows {', '.join(map(str, rows_missing))}); "
                    "every row needs a value at every level."
                )
            codes.append(level_codes.astype(np.int64))
            labels.append(_tidy_index(uniques))
        if len(labels[0]) != n_rows:
            values, counts = np.unique(codes[0], return_counts=True)
            repeated = [labels[0][v] for v in values[counts > 1]]
            raise HierarchyError(f"The hierarchy lists some leaves more than once: {format_values(repeated)}.")
        for level in range(n_levels - 1):
            _check_nesting(labels, codes, level)
        return cls(tuple(labels), tuple(codes), dict(rule) if rule is not None else None)

    # -- shape --

    @property
    def n_levels(self) -> int:
        """Number of levels, the leaves included (ARX's height); the most general level is ``n_levels - 1``."""
        return len(self.labels)

    @property
    def max_level(self) -> int:
        return len(self.labels) - 1

    @property
    def leaves(self) -> pd.Index:
        """The level-0 values."""
        return self.labels[0]

    @property
    def n_leaves(self) -> int:
        return len(self.labels[0])

    def check_level(self, level: object, name: str = "level") -> int:
        """Return ``level`` as an int in ``0 .. max_level`` or raise :class:`HierarchyError`."""
        if isinstance(level, bool) or not isinstance(level, int | np.integer):
            raise HierarchyError(f"{name} must be a whole number, got {level!r}.")
        if not 0 <= int(level) <= self.max_level:
            raise HierarchyError(f"{name} must be between 0 and {self.max_level} for this hierarchy, got {level}.")
        return int(level)

    def parents(self, level: int) -> np.ndarray:
        """For each label at ``level``, the position of its parent in ``labels[level + 1]``."""
        out = np.empty(len(self.labels[level]), dtype=np.int64)
        out[self.codes[level]] = self.codes[level + 1]
        return out

    def level_map(self, source: int, target: int) -> np.ndarray:
        """For each label at level ``source``, the position of its ancestor at level ``target >= source``."""
        out = np.empty(len(self.labels[source]), dtype=np.int64)
        out[self.codes[source]] = self.codes[target]
        return out

    def leaf_counts(self, level: int) -> np.ndarray:
        """Number of leaves under each label at ``level`` (ARX's domain size of a generalized value)."""
        return np.bincount(self.codes[level], minlength=len(self.labels[level]))

    # -- views --

    def matrix(self) -> np.ndarray:
        """The table as an object array, one row per leaf, one column per level."""
        return np.column_stack(
            [np.asarray(self.labels[level], dtype=object)[self.codes[level]] for level in range(self.n_levels)]
        )

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame with columns ``level_0 .. level_{n-1}``."""
        matrix = self.matrix()
        return pd.DataFrame({f"level_{i}": matrix[:, i] for i in range(self.n_levels)}, dtype=object)

    # -- matching data --

    def codes_for(self, values: pd.Series | Sequence[Any], level: int = 0, *, strict: bool = True) -> np.ndarray:
        """Position in ``labels[level]`` of each value (``-1`` for missing values).

        Values are matched as described in the module docstring. With ``strict`` an unmatched non-missing value
        raises :class:`HierarchyError` listing the uncovered values; otherwise it gets ``-2``.
        """
        series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
        encoded = encode_column(series)
        position = lookup(self.labels[level], encoded.categories)
        codes = np.asarray(encoded.codes, dtype=np.int64)
        present = np.zeros(len(position), dtype=bool)
        present[codes[codes >= 0]] = True  # a category no row holds (of a categorical column) needs no leaf
        if strict and (position[present] < 0).any():
            uncovered = list(encoded.categories[(position < 0) & present])
            where = "leaves" if level == 0 else f"values at level {level}"
            name = f" of column '{series.name}'" if series.name is not None else ""
            raise HierarchyError(
                f"{len(uncovered)} value(s){name} are not {where} of the hierarchy: {format_values(uncovered, 8)}. "
                "Add them to the hierarchy file (one row each) or fix the data."
            )
        position = np.where(position < 0, -2, position)
        return np.where(codes < 0, -1, np.append(position, -1)[codes])

    def leaf_codes(self, values: pd.Series | Sequence[Any]) -> np.ndarray:
        """Leaf position of each value (``-1`` for missing); uncovered values raise :class:`HierarchyError`."""
        return self.codes_for(values, 0, strict=True)

    def generalize(self, values: pd.Series, level: int) -> pd.Series:
        """The level-``level`` ancestor of each value (same index and name; missing stays missing).

        Level 0 returns the values unchanged. Raises :class:`HierarchyError` for values that are not leaves.
        """
        level = self.check_level(level)
        leaf = self.leaf_codes(values)
        if level == 0:
            return values.copy()
        codes = np.where(leaf < 0, -1, self.codes[level][np.maximum(leaf, 0)])
        published = self.labels[level].take(codes, allow_fill=True, fill_value=None)
        return pd.Series(published, index=values.index, name=values.name)

    def for_values(self, values: pd.Series | Sequence[Any]) -> Hierarchy:
        """This hierarchy, rebuilt over ``values`` when it has a rule; a table hierarchy is returned as is."""
        if self.rule is None:
            return self
        return hierarchy_from_rule(self.rule, values)

    # -- serialisation --

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"rule": {...}}`` for a rule-based hierarchy, else ``{"rows": [[leaf, ...], ...]}``."""
        if self.rule is not None:
            return {"rule": _jsonable(dict(self.rule))}
        # Convert each level's distinct labels once, then spread them to the leaves.
        columns = []
        for level in range(self.n_levels):
            labels = np.empty(len(self.labels[level]), dtype=object)
            labels[:] = [_jsonable(v) for v in self.labels[level]]
            columns.append(labels[self.codes[level]])
        return {"rows": np.column_stack(columns).tolist()}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], values: pd.Series | Sequence[Any] | None = None) -> Hierarchy:
        """Inverse of :meth:`to_dict`; a rule is applied to ``values`` (required for a rule)."""
        if not isinstance(obj, Mapping):
            raise HierarchyError("A hierarchy must be a JSON object with 'rows' or 'rule'.")
        if "rule" in obj:
            if values is None:
                raise HierarchyError("A rule-based hierarchy needs the column's values to be rebuilt.")
            return hierarchy_from_rule(obj["rule"], values)
        rows = obj.get("rows")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
            raise HierarchyError("A hierarchy object needs 'rows': a non-empty list of lists (leaf first).")
        return cls.from_rows(rows)

    def equals(self, other: Hierarchy) -> bool:
        """True when both map the same leaves to the same labels at every level (as text)."""
        if self.n_levels != other.n_levels or self.n_leaves != other.n_leaves:
            return False
        return bool((self.matrix().astype(str) == other.matrix().astype(str)).all())


def _as_matrix(rows: Sequence[Sequence[Any]] | pd.DataFrame | np.ndarray) -> np.ndarray:
    if isinstance(rows, pd.DataFrame):
        matrix = rows.to_numpy(dtype=object)
    elif isinstance(rows, np.ndarray):
        matrix = rows.astype(object)
    else:
        rows = list(rows)
        if not rows:
            raise HierarchyError("The hierarchy is empty: it needs one row per value.")
        lengths = [len(row) for row in rows]
        if len(set(lengths)) > 1:
            expected = max(set(lengths), key=lengths.count)
            bad = [i + 1 for i, n in enumerate(lengths) if n != expected][:5]
            raise HierarchyError(
                f"Every row of a hierarchy needs the same number of levels; most rows have {expected}, but rows "
                f"{', '.join(map(str, bad))} differ."
            )
        matrix = np.empty((len(rows), lengths[0]), dtype=object)
        for i, row in enumerate(rows):
            matrix[i, :] = list(row)
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise HierarchyError("The hierarchy is empty: it needs one row per value.")
    return matrix


def _tidy_index(values: Any) -> pd.Index:
    """An Index of the labels: numeric when every label is a number, else object."""
    index = pd.Index(values, dtype=object)
    inferred = pd.api.types.infer_dtype(index, skipna=False)
    if inferred in ("integer", "floating", "mixed-integer-float", "decimal"):
        return pd.Index(index.to_numpy().tolist())
    return index


def _check_nesting(labels: list[pd.Index], codes: list[np.ndarray], level: int) -> None:
    child, parent = codes[level], codes[level + 1]
    n_parent = len(labels[level + 1])
    pairs = np.unique(child * n_parent + parent)
    per_child = np.bincount(pairs // n_parent, minlength=len(labels[level]))
    if (per_child > 1).any():
        bad = np.flatnonzero(per_child > 1)
        examples = []
        for code in bad[:3]:
            parents = np.unique(parent[child == code])
            examples.append(f"{labels[level][code]!r} -> {', '.join(repr(labels[level + 1][p]) for p in parents)}")
        raise HierarchyError(
            f"Inconsistent nesting: {len(bad)} value(s) at level {level} have more than one parent at level "
            f"{level + 1} ({'; '.join(examples)}). Each generalized value must have exactly one coarser value."
        )


# --- matching values to labels -----------------------------------------------------------------------------------


def lookup(labels: pd.Index, values: pd.Index) -> np.ndarray:
    """Position of each of the (distinct) ``values`` in ``labels``, ``-1`` when absent.

    Tried in turn for values still unmatched: equality; equal numbers (numeric values against labels that parse
    as numbers, used only when that number is unambiguous among the labels); equal canonical text.
    """
    values = pd.Index(values)
    try:
        position = np.asarray(labels.get_indexer(values), dtype=np.int64)
    except (TypeError, ValueError):
        position = np.full(len(values), -1, dtype=np.int64)
    if (position >= 0).all():
        return position
    if _is_number_index(values):
        todo = np.flatnonzero(position < 0)
        label_numbers = _numbers(labels)
        value_numbers = _numbers(values[todo])
        position[todo] = _unique_lookup(label_numbers, value_numbers)
    todo = np.flatnonzero(position < 0)
    if len(todo):
        position[todo] = _unique_lookup(canonical_text(labels), canonical_text(values[todo]))
    return position


def _unique_lookup(keys: pd.Index, queries: pd.Index) -> np.ndarray:
    """Position of each query among ``keys``, ignoring keys that occur more than once (ambiguous) or are NaN."""
    duplicated = keys.duplicated(keep=False) | pd.isna(keys)
    valid = np.flatnonzero(~np.asarray(duplicated))
    if not len(valid):
        return np.full(len(queries), -1, dtype=np.int64)
    found = keys[valid].get_indexer(queries)
    return np.where(found >= 0, valid[np.maximum(found, 0)], -1).astype(np.int64)


def _is_number_index(index: pd.Index) -> bool:
    return bool(pd.api.types.is_numeric_dtype(index.dtype) and not pd.api.types.is_bool_dtype(index.dtype))


def _numbers(index: pd.Index) -> pd.Index:
    if _is_number_index(index):
        return pd.Index(index.to_numpy(dtype=np.float64))
    text = pd.Series(np.asarray(index, dtype=object)).map(lambda v: v.strip() if isinstance(v, str) else v)
    return pd.Index(pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64))


#: From this many values on, :func:`canonical_text` computes each distinct value's text once.
_ONCE_PER_VALUE = 256


def canonical_text(values: Iterable[Any]) -> pd.Index:
    """The canonical text of each value: integral numbers without decimals, midnight dates as ``YYYY-MM-DD``,
    other values as ``str`` with surrounding spaces removed (used to match values across types)."""
    index = values if isinstance(values, pd.Index) else None
    typed = index is not None and (index.dtype != object or index.inferred_type == "string")
    if index is not None and typed and len(index) > _ONCE_PER_VALUE:
        # Once per distinct value. Typed values and text only: in a mixed object column pandas would take 1, 1.0 and
        # True for one value, whose texts differ.
        codes, uniques = pd.factorize(index, use_na_sentinel=False)
        if len(uniques) < len(index):
            labels = np.asarray(canonical_text(pd.Index(uniques, dtype=index.dtype)), dtype=object)
            return pd.Index(labels[codes], dtype=object)
    if index is not None and len(index) and not index.hasnans:
        # Vectorised for the common all-text and all-integer cases (same result as the per-value rule).
        kind = index.inferred_type
        if kind == "string":
            return pd.Index(np.asarray(index.astype(object).str.strip(), dtype=object), dtype=object)
        if kind == "integer" and not pd.api.types.is_bool_dtype(index.dtype):
            return pd.Index(np.asarray(index.astype(np.int64).astype(str), dtype=object), dtype=object)
    return pd.Index([_canonical(v) for v in values], dtype=object)


def _canonical(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isfinite(number) and number == round(number) and abs(number) < 2**63:
            return str(int(number))
        return repr(number)
    if isinstance(value, pd.Timestamp | np.datetime64):
        stamp = pd.Timestamp(value)
        return stamp.strftime("%Y-%m-%d") if stamp == stamp.normalize() else stamp.isoformat()
    return str(value).strip()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, pd.Timestamp):
        return _canonical(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


# --- ARX CSV -------------------------------------------------------------------------------------------------------


def parse_arx_hierarchy(text: str, *, delimiter: str | None = None, source: str = "the hierarchy") -> Hierarchy:
    """Parse a hierarchy in ARX's CSV format (see the module docstring).

    ``delimiter`` defaults to the one of ``;``, ``,``, tab that splits every line into the same number (> 1) of
    fields, preferring ``;`` (ARX's default); a file with one level needs no delimiter. Blank lines are skipped.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise HierarchyError(f"{source} is empty: it needs one row per value.")
    sep = delimiter or _sniff_delimiter(lines)
    try:
        rows = list(csv.reader(lines, delimiter=sep, quotechar='"', strict=True))
    except csv.Error as exc:
        raise HierarchyError(f"{source} is not valid CSV: {exc}.") from exc
    try:
        return Hierarchy.from_rows(rows)
    except HierarchyError as exc:
        raise HierarchyError(f"{source}: {exc}") from exc


def _sniff_delimiter(lines: Sequence[str]) -> str:
    sample = lines[:200]
    for candidate in (";", ",", "\t"):
        counts = {len(next(csv.reader([line], delimiter=candidate))) for line in sample}
        if len(counts) == 1 and counts.pop() > 1:
            return candidate
    return ";"


def read_arx_hierarchy(path: str | os.PathLike[str], *, delimiter: str | None = None) -> Hierarchy:
    """Read an ARX hierarchy CSV file (UTF-8, else Windows-1252 as ARX on Windows writes it)."""
    target = Path(path)
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        raise HierarchyError(f"Hierarchy file not found: {target}.") from None
    except IsADirectoryError:
        raise HierarchyError(f"{target} is a folder, not a hierarchy file.") from None
    except OSError as exc:
        raise HierarchyError(f"Cannot read the hierarchy {target}: {exc.strerror or exc}.") from exc
    if b"\x00" in raw:
        raise HierarchyError(f"{target.name} is a binary file, not a hierarchy CSV.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    return parse_arx_hierarchy(text, delimiter=delimiter, source=target.name)


def format_arx_hierarchy(hierarchy: Hierarchy, *, delimiter: str = ";") -> str:
    """The hierarchy as ARX CSV text: one line per leaf, canonical text of each value, ``\\n`` line ends."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, quotechar='"', lineterminator="\n")
    for row in hierarchy.matrix().tolist():
        writer.writerow([_canonical(v) if not isinstance(v, str) else v for v in row])
    return buffer.getvalue()


def write_arx_hierarchy(hierarchy: Hierarchy, path: str | os.PathLike[str], *, delimiter: str = ";") -> Path:
    """Write the hierarchy as an ARX CSV file (UTF-8)."""
    target = Path(path)
    target.write_text(format_arx_hierarchy(hierarchy, delimiter=delimiter), encoding="utf-8")
    return target


def load_hierarchies(directory: str | os.PathLike[str], columns: Sequence[str]) -> dict[str, Hierarchy]:
    """Read the hierarchy of each column from ``directory``.

    The file of column ``col`` is ``col.csv`` or a file whose name ends in ``_hierarchy_col.csv`` (ARX's naming,
    e.g. ``adult_hierarchy_age.csv``); an exact-case match is preferred over a case-insensitive one. Raises
    :class:`HierarchyError` naming every column without a file (or with several candidates).
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise HierarchyError(f"Hierarchy folder not found: {folder}.")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".csv")
    found: dict[str, Path] = {}
    missing: list[str] = []
    for column in columns:
        path = _hierarchy_file(files, column)
        if path is None:
            missing.append(column)
        else:
            found[column] = path
    if missing:
        shown = ", ".join(p.name for p in files[:10]) + (" ..." if len(files) > 10 else "") or "none"
        raise HierarchyError(
            f"No hierarchy file for {', '.join(repr(c) for c in missing)} in {folder} (expected '<column>.csv' or "
            f"'<name>_hierarchy_<column>.csv'; files found: {shown})."
        )
    return {column: read_arx_hierarchy(path) for column, path in found.items()}


def _hierarchy_file(files: Sequence[Path], column: str) -> Path | None:
    for fold in (False, True):

        def norm(text: str, fold: bool = fold) -> str:
            return text.lower() if fold else text

        target = norm(column)
        exact = [p for p in files if norm(p.stem) == target]
        suffixed = [p for p in files if norm(p.stem).endswith("_hierarchy_" + target)]
        candidates = exact or suffixed
        if len(candidates) > 1:
            raise HierarchyError(
                f"Several hierarchy files match column '{column}': {', '.join(p.name for p in candidates)}."
            )
        if candidates:
            return candidates[0]
    return None


# --- builders ------------------------------------------------------------------------------------------------------


#: Hierarchies built lately, by (builder function, rule, values): the Fix page builds the hierarchy of a step when the
#: step is checked and again when it is applied from its resolved rule (a hierarchy is immutable, so both share it).
_BUILT: collections.OrderedDict[tuple[str, str, tuple[str, bytes]], Hierarchy] = collections.OrderedDict()
_BUILT_SIZE = 16
#: Only columns at least this long are remembered (a shorter one is cheaper to build again than to hash).
_BUILT_MIN_ROWS = 5_000


def _values_key(values: pd.Series | Sequence[Any]) -> tuple[str, bytes] | None:
    """What identifies ``values`` for :data:`_BUILT` (dtype and a digest of the content), or None when they are not
    remembered: short columns, and object columns holding anything but text (pandas hashes ``1`` and ``"1"``
    alike there)."""
    if not isinstance(values, pd.Series) or len(values) < _BUILT_MIN_ROWS:
        return None
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) not in {"string", "empty"}:
        return None
    hashed = pd.util.hash_pandas_object(values, index=False).to_numpy()
    return str(values.dtype), hashlib.blake2b(hashed.tobytes(), digest_size=20).digest()


def _remembered(
    kind: str, rule: Mapping[str, Any], values: pd.Series | Sequence[Any], build: Callable[[], Hierarchy]
) -> Hierarchy:
    """``build()``, or the hierarchy it gave for the same rule over the same values lately."""
    key = _values_key(values)
    if key is None:
        return build()
    try:
        text = json.dumps(rule, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return build()
    entry = (kind, text, key)
    found = _BUILT.get(entry)
    if found is not None:
        _BUILT.move_to_end(entry)
        return found
    hierarchy: Hierarchy = build()
    _BUILT[entry] = hierarchy
    if hierarchy.rule is not None and kind == "settings":  # applying the step rebuilds it from the resolved rule
        _BUILT[("rule", json.dumps(hierarchy.rule, sort_keys=True, default=repr), key)] = hierarchy
    while len(_BUILT) > _BUILT_SIZE:
        _BUILT.popitem(last=False)
    return hierarchy


def hierarchy_from_rule(rule: Mapping[str, Any], values: pd.Series | Sequence[Any]) -> Hierarchy:
    """Rebuild a builder's hierarchy over ``values`` from its resolved rule (see :attr:`Hierarchy.rule`)."""
    if not isinstance(rule, Mapping) or "builder" not in rule:
        raise HierarchyError("A hierarchy rule must be an object with a 'builder'.")
    return _remembered("rule", rule, values, lambda: _hierarchy_from_rule(rule, values))


def _hierarchy_from_rule(rule: Mapping[str, Any], values: pd.Series | Sequence[Any]) -> Hierarchy:
    builder = rule["builder"]
    options = {k: v for k, v in rule.items() if k != "builder"}
    try:
        if builder == "intervals":
            return interval_hierarchy(
                values,
                widths=options["widths"],
                origin=options["origin"],
                low=options.get("low"),
                high=options.get("high"),
                top=options["top"],
            )
        if builder == "cuts":
            return interval_hierarchy(values, cuts=options["cuts"], top=options["top"])
        if builder == "dates":
            return date_hierarchy(values, levels=options["levels"], dayfirst=options["dayfirst"], top=options["top"])
        if builder == "postcodes":
            return postcode_hierarchy(values, levels=options["levels"], top=options["top"])
        if builder == "frequency":
            return _frequency_from_rule(values, {"builder": builder, **options})
        if builder == "prefix":
            return prefix_hierarchy(values, lengths=options["lengths"], top=options["top"])
        if builder == "masking":
            return masking_hierarchy(values, steps=options["steps"], char=options["char"], top=options["top"])
        if builder == "rare":
            return _rare_from_keep(values, options["keep"], options["other"], options["top"], options["min_count"])
    except KeyError as exc:
        raise HierarchyError(f"The '{builder}' hierarchy rule lacks the parameter {exc}.") from None
    raise HierarchyError(
        f"Unknown hierarchy builder {builder!r}; known: intervals, cuts, dates, postcodes, frequency, prefix, "
        "masking, rare."
    )


def _distinct(values: pd.Series | Sequence[Any]) -> pd.Index:
    """Distinct non-missing values, in first-seen order."""
    series = values if isinstance(values, pd.Series) else pd.Series(list(values))
    unique = series.dropna().unique()
    if isinstance(unique, pd.Categorical):  # the values present, not every category of the dtype
        unique = np.asarray(unique, dtype=object)
    return pd.Index(unique)


def _with_top(rows: list[np.ndarray], top: bool) -> list[np.ndarray]:
    if top and len(pd.unique(rows[-1])) > 1:
        rows.append(np.full(len(rows[0]), TOP, dtype=object))
    return rows


def _build(leaves: pd.Index, levels: list[np.ndarray], rule: Mapping[str, Any]) -> Hierarchy:
    if not len(leaves):
        raise HierarchyError("Cannot build a hierarchy: the column has no non-missing values.")
    matrix = np.column_stack([np.asarray(leaves, dtype=object), *levels])
    return Hierarchy.from_rows(matrix, rule=rule)


def _format_number(value: float) -> str:
    return _canonical(float(value))


def interval_hierarchy(
    values: pd.Series | Sequence[Any],
    *,
    widths: Sequence[float] | None = None,
    origin: float | None = None,
    cuts: Sequence[Sequence[float]] | None = None,
    bins: Sequence[int] | None = None,
    digits: int | None = None,
    low: float | None = None,
    high: float | None = None,
    top: bool = True,
) -> Hierarchy:
    """Nested numeric intervals over the distinct values of a numeric column (ARX ``HierarchyBuilderIntervalBased``).

    Give exactly one of:

    ``widths``
        Fixed-width levels, finest first, e.g. ``[5, 10, 20]``; each width must be a whole multiple of the
        previous one so intervals nest. Intervals are ``[origin + i w, origin + (i + 1) w)``; ``origin``
        defaults to the largest multiple of the coarsest width not above the minimum value (or ``low``).
        ``low`` and ``high`` bottom- and top-code the tails at every level: values below ``low`` are published as
        ``<low`` and values from ``high`` on as ``>=high`` (IHSN SDC practice guide, top and bottom coding); both
        must lie on the coarsest width's grid so that the levels nest.
    ``cuts``
        Explicit interior boundaries per level, finest first, e.g. ``[[18, 25, 35, 50, 65], [35, 65]]``; each
        level's boundaries must be a subset of the finer level's. Intervals are ``< c_0``, ``[c_i, c_{i+1})``
        and ``>= c_last``.
    ``bins``
        Quantile levels: ``bins[0]`` intervals of about equal frequency at the finest level (boundaries are data
        values at the quantiles ``j / bins[0]``, method ``inverted_cdf``, duplicates removed), then each coarser
        level's boundaries are the quantiles ``j / bins[L]`` snapped to the nearest boundary of the finer level. A
        value holding more than ``1 / bins[0]`` of the records (the zeros of an amount) is an interval of its own at
        every level, and the quantiles are those of the other values.
        Resolved into ``cuts`` in :attr:`Hierarchy.rule`. With ``digits``, every boundary is rounded to that
        many significant digits (round bands at the quantiles; boundaries that become equal are merged).

    Intervals over whole numbers with whole boundaries are labelled ``lo-hi`` with ``hi`` inclusive (ARX style,
    ``20-24``); otherwise ``[lo, hi)``. With ``top`` a final level ``*`` is added. Non-numeric values raise
    :class:`HierarchyError`; missing values stay missing.
    """
    given = [x is not None for x in (widths, cuts, bins)]
    if sum(given) != 1:
        raise HierarchyError("Give exactly one of widths=, cuts= or bins= for an interval hierarchy.")
    leaves = _distinct(values)
    numbers = _numeric_leaves(leaves)
    order = np.argsort(numbers, kind="stable")
    leaves, numbers = leaves[order], numbers[order]
    if bins is not None:
        cuts = _quantile_cuts(values, bins)
        if digits is not None:
            places = check_positive_int(digits, "Significant digits")
            cuts = [sorted({float(f"{c:.{places}g}") for c in level}) for level in cuts]
    elif digits is not None:
        raise HierarchyError("digits= rounds quantile boundaries (bins=) only.")
    integral = bool(len(numbers)) and bool(np.all(numbers == np.round(numbers)))
    levels: list[np.ndarray] = []
    if widths is not None:
        widths_f = _check_widths(widths)
        if origin is None:
            start = float(low) if low is not None else float(numbers.min()) if len(numbers) else 0.0
            origin = math.floor(start / widths_f[-1]) * widths_f[-1]
        origin_f = float(origin)
        if not math.isfinite(origin_f):
            raise HierarchyError(f"origin must be a finite number, got {origin!r}.")
        low_f, high_f = _coding_bounds(low, high, origin_f, widths_f[-1])
        whole = integral and all(float(w).is_integer() for w in widths_f) and origin_f.is_integer()
        for width in widths_f:
            index = np.floor((numbers - origin_f) / width)
            lows = origin_f + index * width
            highs = lows + width
            below, above = numbers < low_f, numbers >= high_f
            lows, highs = np.where(below, -np.inf, lows), np.where(below, low_f, highs)
            lows, highs = np.where(above, high_f, lows), np.where(above, np.inf, highs)
            levels.append(_interval_labels(lows, highs, whole))
        rule: dict[str, Any] = {
            "builder": "intervals",
            "widths": [_plain_number(w) for w in widths_f],
            "origin": _plain_number(origin_f),
            "top": top,
        }
        if math.isfinite(low_f):
            rule["low"] = _plain_number(low_f)
        if math.isfinite(high_f):
            rule["high"] = _plain_number(high_f)
    else:
        if low is not None or high is not None:
            raise HierarchyError("low= and high= code the tails of fixed-width intervals (widths=) only.")
        assert cuts is not None
        cut_levels = _check_cuts(cuts)
        whole = integral and all(float(c).is_integer() for level in cut_levels for c in level)
        for boundaries in cut_levels:
            edges = np.asarray(boundaries, dtype=np.float64)
            index = np.searchsorted(edges, numbers, side="right")
            lows = np.concatenate([[-np.inf], edges])[index]
            highs = np.concatenate([edges, [np.inf]])[index]
            levels.append(_interval_labels(lows, highs, whole))
        rule = {"builder": "cuts", "cuts": [[_plain_number(c) for c in lv] for lv in cut_levels], "top": top}
    return _build(leaves, _with_top(levels, top) if levels else [np.full(len(leaves), TOP, dtype=object)], rule)


def _coding_bounds(low: Any, high: Any, origin: float, width: float) -> tuple[float, float]:
    """The bottom- and top-coding bounds (``-inf`` / ``inf`` when absent), checked to lie on the grid
    ``origin + i * width`` of the coarsest level (so that every level's intervals nest)."""
    bounds = []
    for name, value, default in (("low", low, -np.inf), ("high", high, np.inf)):
        if value is None:
            bounds.append(default)
            continue
        if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not math.isfinite(value):
            raise HierarchyError(f"{name} must be a finite number, got {value!r}.")
        steps = (float(value) - origin) / width
        if abs(steps - round(steps)) > 1e-9:
            raise HierarchyError(
                f"{name} = {value:g} must be the origin {origin:g} plus a whole multiple of the coarsest width "
                f"{width:g}, so that the levels nest."
            )
        bounds.append(float(value))
    if bounds[0] >= bounds[1]:
        raise HierarchyError(f"low must be below high, got low = {low!r} and high = {high!r}.")
    return bounds[0], bounds[1]


def _plain_number(value: float) -> int | float:
    number = float(value)
    return int(number) if number.is_integer() else number


def _numeric_leaves(leaves: pd.Index) -> np.ndarray:
    if _is_number_index(leaves):
        return leaves.to_numpy(dtype=np.float64)
    numbers = _numbers(leaves).to_numpy()
    bad = leaves[np.isnan(numbers)]
    if len(bad):
        raise HierarchyError(f"An interval hierarchy needs numbers; these values are not: {format_values(list(bad))}.")
    return numbers


def _check_widths(widths: Sequence[float]) -> list[float]:
    if isinstance(widths, str | bytes) or not len(widths):
        raise HierarchyError("widths must be a non-empty list of positive numbers, finest first.")
    out = []
    for width in widths:
        if isinstance(width, bool) or not isinstance(width, int | float | np.number) or not width > 0:
            raise HierarchyError(f"Interval widths must be positive numbers, got {width!r}.")
        out.append(float(width))
    for finer, coarser in itertools.pairwise(out):
        ratio = coarser / finer
        if ratio <= 1 or abs(ratio - round(ratio)) > 1e-9:
            raise HierarchyError(
                f"Interval widths must nest: each must be a whole multiple (> 1) of the previous; {coarser:g} is "
                f"not a multiple of {finer:g}."
            )
    return out


def _check_cuts(cuts: Sequence[Sequence[float]]) -> list[list[float]]:
    if isinstance(cuts, str | bytes) or not len(cuts):
        raise HierarchyError("cuts must be a non-empty list of boundary lists, finest level first.")
    levels: list[list[float]] = []
    for boundaries in cuts:
        try:
            level = [float(c) for c in boundaries]
        except (TypeError, ValueError):
            raise HierarchyError(f"Interval boundaries must be numbers, got {boundaries!r}.") from None
        if any(not math.isfinite(c) for c in level) or any(b <= a for a, b in itertools.pairwise(level)):
            raise HierarchyError(f"Interval boundaries must be finite and strictly increasing, got {boundaries!r}.")
        if levels and not set(level) <= set(levels[-1]):
            extra = sorted(set(level) - set(levels[-1]))
            raise HierarchyError(
                f"Interval boundaries must nest: {format_values(extra)} at a coarser level are not boundaries of "
                "the finer level."
            )
        levels.append(level)
    return levels


def _quantile_cuts(values: pd.Series | Sequence[Any], bins: Sequence[int]) -> list[list[float]]:
    if isinstance(bins, str | bytes) or not len(bins):
        raise HierarchyError("bins must be a non-empty list of interval counts, finest level first.")
    counts = [check_positive_int(b, "Number of quantile intervals", minimum=1) for b in bins]
    if any(b <= a for a, b in zip(counts[1:], counts, strict=False)):
        raise HierarchyError(f"Quantile interval counts must decrease from the finest level, got {list(bins)}.")
    series = values if isinstance(values, pd.Series) else pd.Series(list(values))
    data = _numeric_leaves(pd.Index(series.dropna()))
    if not len(data):
        raise HierarchyError("Cannot build quantile intervals: the column has no non-missing values.")
    low = data.min()
    # A value holding more than 1 / bins[0] of the records (the zeros of an amount) is a band of its own, and the
    # quantiles are those of the other values: else its ties would swallow most of the bands.
    distinct, frequency = np.unique(data, return_counts=True)
    top = int(frequency.argmax())
    apart: list[float] = []
    rest = data
    if len(distinct) > 1 and frequency[top] * counts[0] > len(data):
        apart = [float(c) for c in distinct[top : top + 2] if c > low]
        rest = data[data != distinct[top]]

    def quantiles(count: int) -> np.ndarray:
        return np.quantile(rest, np.arange(1, count) / count, method="inverted_cdf")

    finest = np.unique(np.concatenate([quantiles(counts[0]), apart]))
    levels = [[float(c) for c in finest if c > low]]
    for count in counts[1:]:
        previous = np.asarray([c for c in levels[-1] if c not in apart])
        if not len(previous):
            levels.append(list(apart))
            continue
        nearest = np.abs(previous[None, :] - np.asarray(quantiles(count))[:, None]).argmin(axis=1)
        levels.append(sorted({float(c) for c in previous[nearest]} | set(apart)))
    return levels


def _interval_labels(lows: np.ndarray, highs: np.ndarray, whole: bool) -> np.ndarray:
    out = np.empty(len(lows), dtype=object)
    pairs, inverse = np.unique(np.column_stack([lows, highs]), axis=0, return_inverse=True)
    texts = []
    for low, high in pairs:
        if np.isinf(low) and np.isinf(high):
            texts.append(TOP)
        elif np.isinf(low):
            texts.append(f"<{_format_number(high)}")
        elif np.isinf(high):
            texts.append(f">={_format_number(low)}")
        elif whole:
            texts.append(f"{_format_number(low)}-{_format_number(high - 1)}")
        else:
            texts.append(f"[{_format_number(low)}, {_format_number(high)})")
    out[:] = np.asarray(texts, dtype=object)[inverse.reshape(-1)]
    return out


_DATE_LEVELS = ("month", "quarter", "year")


def date_hierarchy(
    values: pd.Series | Sequence[Any],
    *,
    levels: Sequence[str] = _DATE_LEVELS,
    dayfirst: bool = False,
    top: bool = True,
) -> Hierarchy:
    """Dates generalized day -> month (``2024-03``) -> quarter (``2024-Q1``) -> year (``2024``) -> ``*``.

    ``levels`` chooses which of ``month``, ``quarter``, ``year`` to use, in that order. Values may be dates or
    text parsed with :func:`pandas.to_datetime` (``format="mixed"``, ``dayfirst``); unparseable values raise
    :class:`HierarchyError` listing them. Leaves are the column's own values.
    """
    chosen = [str(level).lower() for level in levels]
    if (
        not chosen
        or any(level not in _DATE_LEVELS for level in chosen)
        or chosen != sorted(chosen, key=_DATE_LEVELS.index)
        or len(set(chosen)) != len(chosen)
    ):
        raise HierarchyError(
            f"Date levels must be a non-empty ordered subset of {', '.join(_DATE_LEVELS)}; got {list(levels)}."
        )
    leaves = _distinct(values)
    if pd.api.types.is_datetime64_any_dtype(leaves.dtype):
        stamps = pd.DatetimeIndex(leaves)
    else:
        stamps = pd.DatetimeIndex(
            pd.to_datetime(
                pd.Series(np.asarray(leaves, dtype=object)), errors="coerce", format="mixed", dayfirst=dayfirst
            )
        )
        bad = leaves[stamps.isna()]
        if len(bad):
            raise HierarchyError(f"These values are not dates: {format_values(list(bad))}.")
    order = np.argsort(stamps.asi8, kind="stable")
    leaves, stamps = leaves[order], stamps[order]
    year = stamps.year.to_numpy()
    built: list[np.ndarray] = []
    for level in chosen:
        if level == "month":
            text = [f"{y:04d}-{m:02d}" for y, m in zip(year, stamps.month, strict=True)]
        elif level == "quarter":
            text = [f"{y:04d}-Q{q}" for y, q in zip(year, stamps.quarter, strict=True)]
        else:
            text = [f"{y:04d}" for y in year]
        built.append(np.asarray(text, dtype=object))
    rule = {"builder": "dates", "levels": chosen, "dayfirst": bool(dayfirst), "top": top}
    return _build(leaves, _with_top(built, top), rule)


_POSTCODE_LEVELS = ("sector", "district", "area")


def postcode_hierarchy(
    values: pd.Series | Sequence[Any], *, levels: Sequence[str] = _POSTCODE_LEVELS, top: bool = True
) -> Hierarchy:
    """UK postcodes generalized unit (``SW1A 1AA``) -> sector (``SW1A 1``) -> district (``SW1A``) -> area
    (``SW``) -> ``*``.

    Values are full (unit) postcodes in any case and spacing, parsed by
    :func:`privdash.geo.postcodes.parse_postcodes` (Royal Mail format rules); ``levels`` chooses which of
    ``sector``, ``district``, ``area`` to use, in that order. Values that are not unit postcodes (invalid, or
    only a sector, district or area) raise :class:`HierarchyError` listing them. Leaves are the column's own
    values, labels the normalized codes.
    """
    from privdash.geo.postcodes import parse_postcodes

    chosen = [str(level).lower() for level in levels]
    if (
        not chosen
        or any(level not in _POSTCODE_LEVELS for level in chosen)
        or chosen != sorted(chosen, key=_POSTCODE_LEVELS.index)
        or len(set(chosen)) != len(chosen)
    ):
        raise HierarchyError(
            f"Postcode levels must be a non-empty ordered subset of {', '.join(_POSTCODE_LEVELS)}; got {list(levels)}."
        )
    leaves = _distinct(values)
    parsed = parse_postcodes(pd.Series(np.asarray(leaves, dtype=object), dtype=object))
    bad = leaves[(parsed["level"].astype(str) != "unit").to_numpy()]
    if len(bad):
        raise HierarchyError(
            f"These values are not full UK postcodes (unit level, e.g. 'SW1A 1AA'): {format_values(list(bad))}."
        )
    built = [parsed[level].to_numpy(dtype=object) for level in chosen]
    rule = {"builder": "postcodes", "levels": chosen, "top": top}
    return _build(leaves, _with_top(built, top), rule)


def masking_hierarchy(
    values: pd.Series | Sequence[Any], *, steps: int | None = None, char: str = "*", top: bool = True
) -> Hierarchy:
    """Mask trailing characters: level ``i`` replaces the last ``i`` characters with ``char`` (ARX
    ``HierarchyBuilderRedactionBased``, right-to-left redaction), e.g. ``12345 -> 1234* -> 123** -> ...``.

    Values are taken as canonical text (whole numbers without decimals); a value shorter than ``i`` is masked
    entirely, keeping its length. ``steps`` defaults to the longest value's length, and is capped at it (further
    levels would repeat the fully masked one). With ``top``, a final ``*`` level is added when the last level still
    has several values (values of different lengths).
    """
    if not isinstance(char, str) or len(char) != 1:
        raise HierarchyError(f"The masking character must be a single character, got {char!r}.")
    leaves = _distinct(values)
    text = list(canonical_text(leaves))
    longest = max((len(t) for t in text), default=0)
    count = longest if steps is None else min(check_positive_int(steps, "Masking steps"), longest)
    built = []
    for step in range(1, count + 1):
        built.append(np.asarray([t[: max(len(t) - step, 0)] + char * min(step, len(t)) for t in text], dtype=object))
    rule = {"builder": "masking", "steps": count, "char": char, "top": top}
    return _build(leaves, _with_top(built, top) if built else [np.full(len(leaves), TOP, dtype=object)], rule)


def rare_category_hierarchy(
    values: pd.Series | Sequence[Any], *, min_count: int, other: str = "Other", top: bool = True
) -> Hierarchy:
    """Group rare categories: at level 1 every value occurring fewer than ``min_count`` times (strictly) in
    ``values`` becomes ``other``; frequent values keep their (canonical text) label. With ``top`` a final ``*``.

    The kept values are recorded in the rule, so re-applied to new data every value not kept becomes ``other``.
    Raises :class:`HierarchyError` when ``other`` is itself a frequent value (the groups would be ambiguous).
    """
    min_count = check_positive_int(min_count, "min_count")
    series = values if isinstance(values, pd.Series) else pd.Series(list(values))
    counts = series.value_counts(dropna=True, sort=False)
    keep = [v for v, c in zip(counts.index, counts.to_numpy(), strict=True) if c >= min_count]
    return _rare_from_keep(series, [_jsonable(v) for v in keep], other, top, min_count)


def _rare_from_keep(
    values: pd.Series | Sequence[Any], keep: Sequence[Any], other: str, top: bool, min_count: int
) -> Hierarchy:
    if not isinstance(other, str) or not other:
        raise HierarchyError(f"The label for rare values must be non-empty text, got {other!r}.")
    leaves = _distinct(values)
    keep_index = pd.Index(list(keep), dtype=object)
    kept = lookup(keep_index, leaves) >= 0
    labels = canonical_text(leaves)
    if (np.asarray(labels, dtype=object)[kept] == other).any():
        raise HierarchyError(
            f"'{other}' is a frequent value of the column, so it cannot also label the rare ones; choose another "
            "label (other=...)."
        )
    level = np.where(kept, np.asarray(labels, dtype=object), other).astype(object)
    rule = {"builder": "rare", "keep": list(keep), "other": other, "top": top, "min_count": min_count}
    return _build(leaves, _with_top([level], top), rule)


#: Group counts of the frequency grouping shrink by at least this factor per level (halving by default).
FREQUENCY_RATIO = 2.0
#: At most this many levels of frequency groups or prefixes between the leaves and ``*`` (keeps the lattice small).
MAX_GROUP_LEVELS = 5


def frequency_hierarchy(
    values: pd.Series | Sequence[Any],
    *,
    ratio: float = FREQUENCY_RATIO,
    max_levels: int = MAX_GROUP_LEVELS,
    order: Sequence[Any] | None = None,
    top: bool = True,
) -> Hierarchy:
    """Group categories by frequency, the rarest merged first (the IHSN SDC practice guide's "combine categories
    with few observations", ARX's order-based grouping by frequency).

    With ``m`` distinct values, the groups are made by repeatedly merging the two groups with the fewest records
    (ties: the group whose most frequent member comes later in the order most frequent first, then by text); level
    ``L`` is the grouping when ``g_L = ceil(g_{L-1} / r)`` groups are left (``g_0 = m``,
    ``r = max(ratio, m ** (1 / max_levels))``), down to two groups; then ``*`` (with ``top``). So every level has
    fewer groups than the level below it, big categories stay themselves longest, and a merged group holds records
    of similar weight to the others. A group of one value keeps the value's (canonical) text; a merged group is
    labelled by its members, most frequent first (``Germany/Canada``, ``Mexico/Philippines/Germany/... (12
    values)``).

    With ``order`` (the categories of an ordinal column, lowest first), only neighbours merge: the group with the
    fewest records (ties: the later one) merges with its neighbour of fewer records (ties: the one before it), and a
    merged group is labelled by its ends (``Preschool to 4th``); values outside ``order`` come after it, most
    frequent first.

    The resolved rule records the members of every group, so re-applied to other data the mapping is the same; a
    value it has not seen joins the group of the rarest value seen.
    """
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 1:
        raise HierarchyError(f"The frequency ratio must be a number above 1, got {ratio!r}.")
    max_levels = check_positive_int(max_levels, "max_levels")
    series = values if isinstance(values, pd.Series) else pd.Series(list(values))
    counts = series.value_counts(dropna=True, sort=False)
    counts = counts[counts.to_numpy() > 0]  # a categorical column counts its unused categories too
    if not len(counts):
        raise HierarchyError("Cannot build a hierarchy: the column has no non-missing values.")
    text = np.asarray(canonical_text(counts.index), dtype=object)
    by_frequency = np.lexsort((text, -counts.to_numpy()))  # most frequent first, then by text
    if order is not None:
        rank = lookup(pd.Index(list(order), dtype=object), pd.Index(counts.index))
        rank = np.where(rank < 0, len(order) + np.argsort(by_frequency), rank)
        by_frequency = np.argsort(rank, kind="stable")
    members = [_jsonable(v) for v in counts.index[by_frequency]]
    sizes = counts.to_numpy()[by_frequency].astype(np.int64)
    m = len(members)
    step = max(float(ratio), m ** (1.0 / max_levels))
    targets: list[int] = []
    while True:
        target = math.ceil((targets[-1] if targets else m) / step)
        if target < 2 or target >= (targets[-1] if targets else m):
            break
        targets.append(target)
    merged = _merge_rarest(sizes, targets) if order is None else _merge_neighbours(sizes, targets)
    groups = [[[int(i) for i in g] for g in level] for level in merged]
    rarest = int(np.lexsort((-np.arange(m), sizes))[0])  # fewest records, the later on ties
    rule = {
        "builder": "frequency",
        "ratio": _plain_number(ratio),
        "max_levels": max_levels,
        "ordered": order is not None,
        "order": members,
        "rarest": rarest,
        "groups": groups,
        "top": top,
    }
    return _frequency_from_rule(series, rule)


def _merge_neighbours(sizes: np.ndarray, targets: Sequence[int]) -> list[list[list[int]]]:
    """Positions (into ``sizes``, in the ordinal order) of the members of each group when ``targets[j]`` groups are
    left, merging the group of fewest records (ties: the later) with its neighbour of fewer records (ties: the one
    before it). A loop over the categories, not the rows (an ordinal column has few)."""
    groups = [[i] for i in range(len(sizes))]
    weight = [int(size) for size in sizes]
    out: list[list[list[int]]] = []
    for target in targets:
        while len(groups) > target:
            smallest = min(range(len(groups)), key=lambda g: (weight[g], -g))
            before, after = smallest - 1, smallest + 1
            with_after = before < 0 or (after < len(groups) and weight[after] < weight[before])
            first = smallest if with_after else before
            groups[first : first + 2] = [groups[first] + groups[first + 1]]
            weight[first : first + 2] = [weight[first] + weight[first + 1]]
        out.append([list(g) for g in groups])
    return out


def _merge_rarest(sizes: np.ndarray, targets: Sequence[int]) -> list[list[list[int]]]:
    """Positions (into ``sizes``, most frequent first) of the members of each group when ``targets[j]`` groups are
    left, merging the two groups of fewest records first (Huffman's order; ties: the later group first)."""
    heap = [(int(size), -i, i) for i, size in enumerate(sizes)]
    heapq.heapify(heap)
    members: dict[int, list[int]] = {i: [i] for i in range(len(sizes))}
    out: list[list[list[int]]] = []
    for target in targets:
        while len(heap) > target:
            size_a, _, a = heapq.heappop(heap)
            size_b, _, b = heapq.heappop(heap)
            keep, gone = min(a, b), max(a, b)  # the group of the more frequent member keeps its id
            members[keep] = sorted(members[keep] + members.pop(gone))
            heapq.heappush(heap, (size_a + size_b, -keep, keep))
        out.append([members[i] for i in sorted(members)])
    return out


def _frequency_from_rule(values: pd.Series | Sequence[Any], rule: Mapping[str, Any]) -> Hierarchy:
    leaves = _distinct(values)
    order = pd.Index(list(rule["order"]), dtype=object)
    if not len(order):
        raise HierarchyError("A frequency rule needs the values it grouped ('order').")
    position = lookup(order, leaves)
    rarest = int(rule.get("rarest", len(order) - 1))
    position = np.where(position < 0, rarest, position)  # unseen values join the rarest value's group
    names = np.asarray(canonical_text(order), dtype=object)
    built: list[np.ndarray] = []
    for groups in rule["groups"]:
        group_of = np.full(len(order), -1, dtype=np.int64)
        for number, group in enumerate(groups):
            group_of[np.asarray(group, dtype=np.int64)] = number
        if (group_of < 0).any():
            raise HierarchyError("A frequency rule's groups must hold every value of its 'order' once.")
        labels = _group_labels(names, groups, ordered=bool(rule.get("ordered", False)))
        built.append(labels[group_of[position]])
    return _build(leaves, _top_levels(built, bool(rule["top"]), len(leaves)), rule)


def _group_labels(names: np.ndarray, groups: Sequence[Sequence[int]], *, ordered: bool = False) -> np.ndarray:
    """One label per group: a single member's text, else the members' texts (most frequent first, at most three,
    then the count), or for ordered groups the ends (``low to high``); a label equal to a single member's text
    elsewhere gets `` (group)``."""
    labels = np.empty(len(groups), dtype=object)
    for number, group in enumerate(groups):
        texts = [str(names[i]) for i in group]
        if len(texts) == 1:
            labels[number] = texts[0]
        elif ordered:
            labels[number] = f"{texts[0]} to {texts[-1]}"
        elif len(texts) <= 3:
            labels[number] = "/".join(texts)
        else:
            labels[number] = "/".join(texts[:3]) + f"/... ({len(texts)} values)"
    single = {labels[i] for i, group in enumerate(groups) if len(group) == 1}
    for number, group in enumerate(groups):
        if len(group) > 1 and labels[number] in single:
            labels[number] = f"{labels[number]} (group)"
    return labels


#: Separators ignored in structured codes (``A01.1``, ``01.11``, ``2211``, ``10-115``).
_CODE_SEPARATORS = r"[\s.\-/]"


def _stripped_codes(leaves: pd.Index) -> pd.Series:
    """The canonical text of each leaf without separators, as Arrow strings (Arrow's string functions)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # Spaces are separators, so text needs no canonical form (which only strips them).
    text = leaves if leaves.inferred_type == "string" else canonical_text(leaves)
    array = pa.array(np.asarray(text, dtype=object), type=pa.string())
    stripped = pc.replace_substring_regex(array, _CODE_SEPARATORS, "")
    return pd.Series(pd.arrays.ArrowStringArray(stripped))


def prefix_hierarchy(
    values: pd.Series | Sequence[Any], *, lengths: Sequence[int] | None = None, top: bool = True
) -> Hierarchy:
    """Structured codes generalized to ever shorter prefixes (ICD-10 ``A01.1 -> A01* -> A0* -> A*``, NACE / ISCO
    ``2211 -> 221* -> 22* -> 2*``, ZIP codes; the classifications' own hierarchy, as ARX's redaction builder
    without keeping the length).

    Separators (spaces, ``.``, ``-``, ``/``) are ignored; level ``j`` keeps the first ``lengths[j]`` characters
    followed by ``*`` (a code no longer than that keeps all its characters and gets the ``*`` too, so ``A01`` and
    ``A01.1`` share ``A01*``). ``lengths`` must decrease; by default every length from the longest code's minus one
    down to 1. With ``top`` a final ``*``.
    """
    leaves = _distinct(values)
    codes = _stripped_codes(leaves)
    longest = int(codes.str.len().max()) if len(codes) else 0
    chosen = list(range(longest - 1, 0, -1)) if lengths is None else list(lengths)
    for length in chosen:
        check_positive_int(length, "A prefix length")
    if any(b >= a for a, b in itertools.pairwise(chosen)):
        raise HierarchyError(f"Prefix lengths must decrease from the finest level, got {chosen}.")
    built = [(codes.str.slice(0, length) + "*").to_numpy(dtype=object, na_value=TOP) for length in chosen]
    rule = {"builder": "prefix", "lengths": [int(n) for n in chosen], "top": top}
    return _build(leaves, _top_levels(built, top, len(leaves)), rule)


def _top_levels(built: list[np.ndarray], top: bool, n_leaves: int) -> list[np.ndarray]:
    """The levels with ``*`` added on top (with ``top``) when they leave several groups; without levels, ``*``
    alone when there are several leaves (a single leaf has nothing to generalize)."""
    if built:
        return _with_top(built, top)
    return [np.full(n_leaves, TOP, dtype=object)] if top and n_leaves > 1 else []


def looks_like_codes(values: pd.Series | Sequence[Any]) -> bool:
    """True for text codes with a prefix structure: every distinct value, separators removed, is 2 to 12 letters or
    digits of which at least two thirds are digits, starting with at most three letters (``A01.1``, ``01.11``,
    ``2211``, ``02139``), the lengths differ by at most 3, and the first characters alone already group them
    (fewer distinct first characters than values)."""
    leaves = _distinct(values)
    if len(leaves) < 3 or _is_number_index(leaves):
        return False
    if len(leaves) > 1000 and not _code_shaped(_stripped_codes(leaves[:1000])):
        return False  # most text columns fail on their first values already
    codes = _stripped_codes(leaves)
    if not _code_shaped(codes):
        return False
    lengths = codes.str.len()
    return int(lengths.max() - lengths.min()) <= 3 and codes.str.slice(0, 1).nunique() < len(codes)


def _code_shaped(codes: pd.Series) -> bool:
    """Every code is at most 3 letters, a digit, then letters or digits, 2 to 12 in all, two thirds digits."""
    if not codes.str.fullmatch(r"[A-Za-z]{0,3}[0-9][A-Za-z0-9]{0,10}").all():
        return False
    lengths, digits = codes.str.len(), codes.str.count(r"[0-9]")
    return bool((lengths >= 2).all()) and bool((digits * 3 >= lengths * 2).all())


def _prefix_rule(values: pd.Series) -> dict[str, Any]:
    """The prefix lengths, longest first, that each group the codes into fewer groups than the length before
    (the leaves count as the first): the default prefix rule without its pointless levels."""
    leaves = _distinct(values)
    codes = _stripped_codes(leaves)
    kept: list[int] = []
    groups = len(leaves)
    for length in range(int(codes.str.len().max()) - 1, 0, -1):
        count = int(codes.str.slice(0, length).nunique())
        if count < groups:
            kept.append(length)
            groups = count
    return {"builder": "prefix", "lengths": kept} if kept else {"builder": "frequency"}


def pointless_levels(hierarchy: Hierarchy) -> list[int]:
    """The levels ``L >= 1`` that group the leaves exactly as level ``L - 1`` does: they change values without
    lowering the number of distinct values (levels nest, so equal counts mean equal groups)."""
    counts = [len(labels) for labels in hierarchy.labels]
    return [level for level in range(1, len(counts)) if counts[level] == counts[level - 1]]


# --- rule settings and defaults ------------------------------------------------------------------------------------

#: What a user names to build a hierarchy (the *rule settings*, see :func:`build_hierarchy`).
RULE_BUILDERS = ("intervals", "quantiles", "dates", "postcodes", "frequency", "prefix", "masking", "rare")
#: The settings each builder takes besides ``builder``.
RULE_SETTINGS: dict[str, frozenset[str]] = {
    "intervals": frozenset({"widths", "origin", "low", "high"}),
    "quantiles": frozenset({"bins", "digits"}),
    "dates": frozenset({"levels"}),
    "postcodes": frozenset({"levels"}),
    "frequency": frozenset({"ratio", "ordered"}),
    "prefix": frozenset({"lengths"}),
    "masking": frozenset({"steps"}),
    "rare": frozenset({"min_count"}),
}


def build_hierarchy(rule: Mapping[str, Any], values: pd.Series) -> Hierarchy:
    """The hierarchy that rule settings describe, built over ``values``.

    Rule settings name a builder and its main parameters, the rest taken at the builder's default::

        {"builder": "intervals", "widths": [5, 10, 20], "origin"?: 0, "low"?: 20, "high"?: 80}
        {"builder": "quantiles", "bins": [8, 4, 2], "digits"?: 2}    {"builder": "prefix", "lengths"?: [3, 2, 1]}
        {"builder": "frequency", "ratio"?: 2, "ordered"?: true}
        {"builder": "dates", "levels": ["month", "year"]}            {"builder": "postcodes", "levels": ["district"]}
        {"builder": "masking", "steps": 3}                           {"builder": "rare", "min_count": 10}

    The hierarchy records its resolved rule (:attr:`Hierarchy.rule`), e.g. the cut points of the quantiles or the
    members of the frequency groups. Unknown builders or settings raise :class:`HierarchyError`.
    """
    builder = rule.get("builder") if isinstance(rule, Mapping) else None
    if builder not in RULE_BUILDERS:
        raise HierarchyError(f"A hierarchy rule needs a 'builder': one of {', '.join(RULE_BUILDERS)}.")
    return _remembered("settings", rule, values, lambda: _build_hierarchy(rule, values))


def _build_hierarchy(rule: Mapping[str, Any], values: pd.Series) -> Hierarchy:
    builder = rule["builder"]
    options = {key: value for key, value in rule.items() if key != "builder"}
    unknown = sorted(set(options) - RULE_SETTINGS[builder])
    if unknown:
        raise HierarchyError(f"The '{builder}' rule has unknown setting(s) {', '.join(unknown)}.")
    if builder == "intervals":
        return interval_hierarchy(
            values,
            widths=options.get("widths"),
            origin=options.get("origin"),
            low=options.get("low"),
            high=options.get("high"),
        )
    if builder == "quantiles":
        return interval_hierarchy(values, bins=options.get("bins"), digits=options.get("digits"))
    if builder == "dates":
        return date_hierarchy(values, levels=options.get("levels", _DATE_LEVELS))
    if builder == "postcodes":
        return postcode_hierarchy(values, levels=options.get("levels", _POSTCODE_LEVELS))
    if builder == "frequency":
        return frequency_hierarchy(
            values, ratio=options.get("ratio", FREQUENCY_RATIO), order=_categories(values, options.get("ordered"))
        )
    if builder == "prefix":
        return prefix_hierarchy(values, lengths=options.get("lengths"))
    if builder == "masking":
        return masking_hierarchy(values, steps=options.get("steps"))
    return rare_category_hierarchy(values, min_count=options.get("min_count", 10))


def _categories(values: pd.Series, ordered: Any) -> list[Any] | None:
    """The categories of an ordered categorical column, lowest first, when ``ordered`` asks for them."""
    if not ordered:
        return None
    dtype = values.dtype if isinstance(values, pd.Series) else None
    if not isinstance(dtype, pd.CategoricalDtype) or not dtype.ordered:
        raise HierarchyError("Ordered frequency groups need an ordinal column (ordered categories).")
    return list(dtype.categories)


def nice_width(values: pd.Series, intervals: int = 20) -> float | int:
    """A round interval width (1, 2 or 5 times a power of ten) giving about ``intervals`` intervals over the range.

    Non-numbers are ignored; a column of whole numbers gets a whole width; an empty or constant column gets 1.
    """
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    span = float(numbers.max() - numbers.min()) if len(numbers) else 0.0
    if span <= 0:
        return 1
    width = _round_width(span / intervals)
    if bool((numbers % 1 == 0).all()):
        width = max(width, 1)
    return _plain_number(width)


def _round_width(raw: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``raw > 0``."""
    power = 10.0 ** math.floor(math.log10(raw))
    width = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-12))
    return float(f"{width:.12g}")


#: Share of the records in each tail that default intervals bottom- and top-code (the 1st and 99th percentiles).
TAIL_SHARE = 0.01
#: Default intervals aim at about this many intervals of the finest width between the 1st and 99th percentiles.
DEFAULT_INTERVALS = 20
#: A column whose spread on one side of the median is this many times the other side's is skewed: quantile bands.
SKEW_RATIO = 3.0
#: The widths of the default levels by the finest width's leading digit (1, 2 or 5 times a power of ten): each a
#: multiple of the one before, e.g. ages in 5, 10 and 20 years, amounts in 1,000, 5,000 and 10,000.
_WIDTH_LADDERS = {1: (1, 5, 10), 2: (2, 10, 20), 5: (5, 10, 20)}
#: Bands of the default quantile levels of a skewed column, finest first, and the significant digits their
#: boundaries are rounded to.
DEFAULT_BINS = (16, 8, 4)
QUANTILE_DIGITS = 2


def default_rule(values: pd.Series, kind: StatisticalType | str, k: int = 5) -> dict[str, Any]:
    """Rule settings that suit a column of statistical type ``kind`` (see :func:`build_hierarchy`), resolved over
    ``values`` so that no level is pointless (:func:`pointless_levels`: a level that groups the values as the level
    below does is left out).

    * Numbers (a ``NUMERICAL`` or ``COORDINATE`` column of a numeric dtype), with ``p1``, ``p50``, ``p99`` the 1st,
      50th and 99th percentiles (``inverted_cdf``, data values):

      - skewed (``p99 - p50 > 3 (p50 - p1)`` or the reverse, e.g. money with a long tail): quantile bands,
        ``bins`` 16, 8, 4, boundaries rounded to 2 significant digits (the first and last bands are the bottom
        and top codes; a value holding more than 1/16 of the records is a band of its own);
      - otherwise fixed widths a person would choose: the finest ``w`` is the round width (1, 2 or 5 times a
        power of ten, whole for whole numbers) nearest above ``(p99 - p1) / 20``, then ``w`` 5w 10w, ``w`` 5w 10w
        or ``w`` 2w 4w for a ``w`` starting with 1, 2 or 5 (ages: 5, 10, 20 years); with ``W`` the coarsest
        width, the tails are bottom- and top-coded at ``low = W floor(p1 / W)`` (values below it, fewer than 1%,
        become ``<low``) and ``high = W (floor(p99 / W) + 1)`` (values from it on, beyond the 99th percentile,
        become ``>=high``), each only when it cuts off some value.

    * Dates: month, quarter, year. UK postcodes: sector, district, area.
    * Text codes with a prefix structure (:func:`looks_like_codes`: ICD, NACE, ISCO, ZIP-like): prefixes one
      character shorter per level (:func:`prefix_hierarchy`).
    * Anything else (nominal and ordinal text, integer-coded categories, a numerical column that holds text or
      infinities): frequency groups, the rarest categories merged first (:func:`frequency_hierarchy`); the
      categories of an ordered categorical column (an ordinal read from SPSS or Stata labels) merge only with
      their neighbours (``"ordered": True``).

    ``k`` is accepted for callers of the older rule (rare values under ``max(10, 2k)``) and no longer used.
    """
    kind = StatisticalType(kind)
    settings: dict[str, Any]
    if kind in (StatisticalType.NUMERICAL, StatisticalType.COORDINATE) and pd.api.types.is_numeric_dtype(values):
        settings = _number_rule(values)
    elif kind == StatisticalType.DATE:
        settings = {"builder": "dates", "levels": list(_DATE_LEVELS)}
    elif kind == StatisticalType.POSTCODE:
        settings = {"builder": "postcodes", "levels": list(_POSTCODE_LEVELS)}
    elif isinstance(values.dtype, pd.CategoricalDtype) and values.dtype.ordered:
        settings = {"builder": "frequency", "ordered": True}
    elif looks_like_codes(values):
        return _prefix_rule(values)
    else:
        settings = {"builder": "frequency"}
    return _without_pointless_levels(settings, values)


def _number_rule(values: pd.Series) -> dict[str, Any]:
    numbers = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=np.float64)
    if len(np.unique(numbers)) < 2 or not np.isfinite(numbers).all():
        return {"builder": "frequency"}  # nothing to cut, or infinities no interval holds
    low_q, median, high_q = np.quantile(numbers, [TAIL_SHARE, 0.5, 1 - TAIL_SHARE], method="inverted_cdf")
    below, above = median - low_q, high_q - median
    if max(below, above) > SKEW_RATIO * min(below, above):
        return {"builder": "quantiles", "bins": list(DEFAULT_BINS), "digits": QUANTILE_DIGITS}
    smallest, largest = float(numbers.min()), float(numbers.max())
    span = float(high_q - low_q) or largest - smallest
    finest = _round_width(span / DEFAULT_INTERVALS)
    if bool(np.all(numbers == np.round(numbers))):
        finest = max(finest, 1.0)
    power = 10.0 ** math.floor(math.log10(finest) + 1e-12)
    digit = round(finest / power)
    widths = [_plain_number(float(f"{m * power:.12g}")) for m in _WIDTH_LADDERS[digit]]
    coarsest = float(widths[-1])
    settings: dict[str, Any] = {"builder": "intervals", "widths": widths}
    low = math.floor(low_q / coarsest) * coarsest
    high = (math.floor(high_q / coarsest) + 1) * coarsest
    if low > smallest:
        settings["low"] = _plain_number(low)
    if high <= largest:
        settings["high"] = _plain_number(high)
    return settings


#: The list setting whose entries are the levels of each builder's hierarchy, level 1 first.
_LEVEL_SETTING = {
    "intervals": "widths",
    "quantiles": "bins",
    "dates": "levels",
    "postcodes": "levels",
    "prefix": "lengths",
}


def _without_pointless_levels(settings: dict[str, Any], values: pd.Series) -> dict[str, Any]:
    """``settings`` without the entries that make pointless levels over ``values``; settings that do not fit the
    values are returned as they are (the builder's error is for the caller), settings left without a level become
    frequency groups."""
    key = _LEVEL_SETTING.get(settings["builder"])
    while key is not None:
        try:
            pointless = pointless_levels(build_hierarchy(settings, values))
        except HierarchyError:
            return settings
        entries = list(settings[key])
        pointless = [level for level in pointless if level <= len(entries)]
        if not pointless:
            break
        kept = [entry for level, entry in enumerate(entries, start=1) if level not in pointless]
        if not kept:
            return {"builder": "frequency"}
        settings = {**settings, key: kept}
    return settings


def search_hierarchy(values: pd.Series, kind: StatisticalType | str, k: int) -> Hierarchy:
    """The hierarchy the least-lossy search uses for a quasi-identifier: the :func:`default_rule` of its type, or,
    when the values do not fit that rule (e.g. a date column with unparseable values), frequency groups."""
    try:
        return build_hierarchy(default_rule(values, kind, k), values)
    except HierarchyError:
        return frequency_hierarchy(values)
