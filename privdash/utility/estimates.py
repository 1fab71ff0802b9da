"""Utility in the data steward's terms: the estimates the data are published for, before and after a fix.

The steward names the estimates that matter (:class:`Estimate`, or its text form, :func:`parse_estimate`) and
:func:`compare_estimates` computes each on the original table and on the published one, with its confidence
interval and the overlap of the two intervals.

Estimates (``w_i`` the survey weight of record ``i``, 1 without a weight column; sums over the records used)
-------------------------------------------------------------------------------------------------------------
``mean``  ``sum w y / sum w``; ``total``  ``sum w y``; ``share``  the mean of the indicator ``1[x = c]``, for one
category ``c`` or for each; each optionally by group (domain estimates over the groups of the ``by`` columns);
``crosstab``  the share of each cell of two or more columns (every cell over all records); ``coef``  the
coefficients of the weighted least-squares regression of a numeric outcome on named predictors (an intercept; a
numeric predictor as it is; a categorical one, text or ``C(x)``, dummy-coded against its most frequent category
in the original data, by weighted count). At most :data:`MAX_TERMS` numbers per estimate and
:data:`MAX_COEFFICIENTS` coefficients (a column with a value per record makes no estimate).

Standard errors (Taylor linearization, weights treated as fixed)
----------------------------------------------------------------
The design is taken as one stratum of ``n`` records drawn with replacement with unequal weights: no strata, no
clusters (PSUs), no finite population correction, which the data do not describe. Each estimate's linearized
values ``z_i`` give ``v = n / (n - 1) sum_i (z_i - mean z)^2`` (Woodruff 1971; Wolter, *Introduction to Variance
Estimation*, 2007; what R's ``survey`` package gives for ``svydesign(ids = ~1, weights = ~w)``):

* total of ``y`` over group ``d``: ``z_i = w_i y_i 1[i in d]``;
* mean over ``d`` (a ratio): ``z_i = w_i (y_i - mean_d) 1[i in d] / W_d``, ``W_d = sum_{i in d} w_i``; a domain's
  variance uses all ``n`` records (its size is random), and a share is the mean of an indicator;
* regression coefficients (sandwich): ``V = A^-1 [n / (n - 1) sum_i u_i u_i'] A^-1`` with ``A = X'WX`` and
  ``u_i = w_i e_i x_i`` (``e_i`` the residual; Binder 1983). Without weights it is HC0 times ``n / (n - 1)``.

With equal weights the mean's standard error is the textbook ``s / sqrt(n)``. The interval at level ``1 - a`` is
``estimate +- z_{1-a/2} SE`` (normal quantile; 95% by default), never clipped (a share's interval may pass 0 or 1).

Interval overlap (Karr, Kohnen, Oganian, Reiter & Sanil 2006, The American Statistician 60(3), eq. 5)
------------------------------------------------------------------------------------------------------
With ``(l_o, u_o)`` the interval from the original data and ``(l_m, u_m)`` from the published data,
``J = 1/2 [(min(u_o, u_m) - max(l_o, l_m)) / (u_o - l_o) + (min(u_o, u_m) - max(l_o, l_m)) / (u_m - l_m)]``:
the average share of each interval covered by their intersection. 1 for identical intervals, 0 for intervals
that only touch. The measure is defined through the length of the intersection; disjoint intervals have an empty
one, of length 0, so privdash reports ``J = 0`` for them (``overlap``). The formula applied as written to disjoint
intervals gives a negative value that falls with the gap between them; some implementations report that value,
and privdash gives it too (``overlap_signed``). A zero-width interval (a share of 0 or
1, a constant column) is the limit of the formula: two equal points 1, a point inside the other interval 1/2,
otherwise 0 (the signed value is then undefined).

What "after" means
------------------
* **Suppressed records**: the estimates after use the published records only, with their weights as published
  (not recalibrated), as an analyst of the release would: a total falls by the weight of the removed records.
* **Missing values**: a record is used when every column the estimate names, and its weight, has a value
  (complete cases); on the published side a cell published as ``*`` (fully generalized) or blanked is missing.
* **Generalized numbers**: a numeric column published as intervals stands for the midpoint of each: ``35-39``
  (whole numbers, both ends included) for 37, ``[1.5, 2.5)`` (or ARX's ``[1.5, 2.5[``) for 2; a bottom or top
  code (``<20``, ``>=80``, ``<= 5``, ``>= 90``) for the midpoint of an interval as wide as the nearest closed
  interval of the column published beside it (``>=80`` next to ``70-79`` stands for 84.5), or, with no interval
  published, for its threshold (as top and bottom coding publish it). Any other text (a group of categories)
  makes the estimate not computable, never 0.
* **Generalized categories**: shares, groups, cells and dummies are those of the published categories. A category
  of the original that is no longer published, when the column publishes new labels (it was merged into a
  group), is *not computable* after; with no new label its share is 0 (all its records were removed). A published
  label that is not an original category (a group) has no estimate before.
* The weight column, or a column the estimate uses, that is not published makes the estimate not computable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import ColumnError, ParameterError, check_columns, check_fraction
from privdash.transform.hierarchy import TOP, canonical_text

__all__ = [
    "ESTIMATE_KINDS",
    "MAX_COEFFICIENTS",
    "MAX_TERMS",
    "ConfidenceInterval",
    "Estimate",
    "EstimateComparison",
    "EstimateRow",
    "compare_estimates",
    "estimates_table",
    "interval_overlap",
    "parse_estimate",
    "published_numbers",
]

#: The kinds of estimate, with what each computes.
ESTIMATE_KINDS: dict[str, str] = {
    "mean": "weighted mean of a numeric column",
    "total": "weighted total of a numeric column",
    "share": "weighted share of a category (or of each category)",
    "crosstab": "weighted share of each cell of two or more columns",
    "coef": "weighted least-squares regression coefficients",
}
#: Most numbers one estimate may have (categories times groups, cells), and most regression coefficients: a column
#: with a value per record would otherwise make a table as long as the data.
MAX_TERMS = 1000
MAX_COEFFICIENTS = 100
_KIND_ALIASES = {
    "sum": "total",
    "proportion": "share",
    "prop": "share",
    "table": "crosstab",
    "cross": "crosstab",
    "regression": "coef",
    "coefficient": "coef",
    "wls": "coef",
}


# --- the spec ------------------------------------------------------------------------------------------------------


def _names(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    if not isinstance(value, Iterable) or isinstance(value, bytes | Mapping):
        raise ParameterError(f"{name} must be a list of column names, got {value!r}.")
    out = tuple(value)
    if not all(isinstance(v, str) and v for v in out):
        raise ParameterError(f"{name} must be a list of column names, got {value!r}.")
    return out


@dataclass(frozen=True)
class Estimate:
    """An estimate the steward names: ``Estimate("mean", "income", by=("region",))``.

    ``kind``: one of :data:`ESTIMATE_KINDS`. ``column``: the numeric column (mean, total), the categorical one
    (share), the first column of a cross-table, or the regression's outcome. ``by``: the grouping columns (mean,
    total, share) or the other columns of a cross-table. ``category``: the category of a share (None: every
    category). ``predictors`` and ``categorical`` (predictors dummy-coded even when numeric): a regression's.
    """

    kind: str
    column: str
    by: tuple[str, ...] = ()
    category: str | None = None
    predictors: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        kind = str(self.kind).strip().lower()
        kind = _KIND_ALIASES.get(kind, kind)
        if kind not in ESTIMATE_KINDS:
            raise ParameterError(f"Unknown estimate {self.kind!r}; use one of {', '.join(ESTIMATE_KINDS)}.")
        object.__setattr__(self, "kind", kind)
        if not isinstance(self.column, str) or not self.column:
            raise ParameterError(f"An estimate names its column, got {self.column!r}.")
        for name in ("by", "predictors", "categorical"):
            object.__setattr__(self, name, _names(getattr(self, name), name))
        if self.category is not None:
            object.__setattr__(self, "category", str(self.category))
        if kind == "crosstab" and not self.by:
            raise ParameterError("A cross-table needs two columns or more (crosstab:a*b).")
        if kind == "coef":
            if not self.predictors:
                raise ParameterError("A regression needs at least one predictor (coef:y~x).")
            if self.by:
                raise ParameterError("A regression is not estimated by group; add the group as a predictor.")
            unknown = [c for c in self.categorical if c not in self.predictors]
            if unknown:
                raise ParameterError(f"categorical names columns that are not predictors: {', '.join(unknown)}.")
            if self.column in self.predictors:
                raise ParameterError(f"'{self.column}' cannot be both the outcome and a predictor.")
        elif self.predictors or self.categorical:
            raise ParameterError("Only a regression (coef) has predictors.")
        if self.category is not None and kind != "share":
            raise ParameterError("Only a share names a category.")
        if self.column in self.by or len(set(self.by)) != len(self.by):
            raise ParameterError("A column is named twice in the estimate.")

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the estimate uses."""
        return (self.column, *self.by, *self.predictors)

    def text(self) -> str:
        """The estimate in the text syntax of :func:`parse_estimate` (``mean:income by region``)."""
        if self.kind == "crosstab":
            return "crosstab:" + "*".join(self.columns)
        if self.kind == "coef":
            terms = [f"C({p})" if p in self.categorical else p for p in self.predictors]
            return f"coef:{self.column}~{'+'.join(terms)}"
        head = self.column if self.category is None else f"{self.column}={self.category}"
        return f"{self.kind}:{head}" + (f" by {','.join(self.by)}" if self.by else "")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "column": self.column}
        if self.by:
            out["by"] = list(self.by)
        if self.category is not None:
            out["category"] = self.category
        if self.predictors:
            out["predictors"] = list(self.predictors)
        if self.categorical:
            out["categorical"] = list(self.categorical)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | str) -> Estimate:
        """The estimate of a JSON object (:meth:`to_dict`); a string is read by :func:`parse_estimate`."""
        if isinstance(data, str):
            return parse_estimate(data)
        if not isinstance(data, Mapping):
            raise ParameterError(f"An estimate is a JSON object or a text, got {data!r}.")
        known = {"kind", "column", "by", "category", "predictors", "categorical"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ParameterError(f"Unknown key(s) in an estimate: {', '.join(map(str, unknown))}.")
        if "kind" not in data or "column" not in data:
            raise ParameterError("An estimate names its kind and its column.")
        return cls(
            kind=data["kind"],
            column=data["column"],
            by=data.get("by", ()),
            category=data.get("category"),
            predictors=data.get("predictors", ()),
            categorical=data.get("categorical", ()),
        )


_BY = re.compile(r"\s+by\s+", re.IGNORECASE)
_CATEGORICAL = re.compile(r"^C\((.+)\)$")


def _split(text: str, separator: str) -> list[str]:
    return [part.strip() for part in text.split(separator)]


def parse_estimate(text: str) -> Estimate:
    """An estimate from its text form (``--estimate`` of ``privdash anonymize``)::

        mean:income                   total:income by region        mean:income by region,sex
        share:sex=Female              share:sex (every category)    share:sex=Female by region
        crosstab:sex*race             coef:income~age+sex           coef:income~age+C(region)

    ``kind:rest``; ``by`` separates the groups (comma-separated); ``C(x)`` dummy-codes a numeric predictor.
    """
    if not isinstance(text, str) or ":" not in text:
        raise ParameterError(
            f"An estimate reads kind:column, e.g. 'mean:income by region' or 'coef:income~age+sex'; got {text!r}."
        )
    kind, rest = (part.strip() for part in text.split(":", 1))
    kind = _KIND_ALIASES.get(kind.lower(), kind.lower())
    if kind == "coef":
        outcome, _, terms = rest.partition("~")
        if not terms.strip():
            raise ParameterError(f"A regression reads coef:outcome~x1+x2, got {text!r}.")
        predictors, categorical = [], []
        for term in _split(terms, "+"):
            match = _CATEGORICAL.match(term)
            name = match.group(1).strip() if match else term
            predictors.append(name)
            if match:
                categorical.append(name)
        return Estimate("coef", outcome.strip(), predictors=tuple(predictors), categorical=tuple(categorical))
    if kind == "crosstab":
        parts = [p for p in _split(rest, "*") if p]
        if len(parts) < 2:
            raise ParameterError(f"A cross-table reads crosstab:a*b, got {text!r}.")
        return Estimate("crosstab", parts[0], by=tuple(parts[1:]))
    head, *groups = _BY.split(rest, maxsplit=1)
    by = tuple(p for p in _split(groups[0], ",") if p) if groups else ()
    category = None
    if kind == "share" and "=" in head:
        head, category = (part.strip() for part in head.split("=", 1))
    return Estimate(kind, head.strip(), by=by, category=category)


# --- results -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfidenceInterval:
    """An estimate on one table: ``value``, standard error ``se``, confidence interval ``[low, high]``, the ``n``
    records used, and the ``records`` its labels describe (a group's records; for a share or a cell, those having
    the category; for a dummy's coefficient, those of its category; otherwise ``n``)."""

    value: float
    se: float
    low: float
    high: float
    n: int
    records: int = -1

    def __post_init__(self) -> None:
        if self.records < 0:
            object.__setattr__(self, "records", self.n)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "se": self.se,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "records": self.records,
        }


@dataclass(frozen=True)
class EstimateRow:
    """One number of an estimate (a group's mean, a category's share, a coefficient) before and after.

    ``before`` or ``after`` is None when it is not computable, ``note`` saying why; ``overlap`` is Karr et al.'s
    interval overlap (0..1) and ``overlap_signed`` the same without the floor at 0 (None where undefined).
    """

    term: str
    group: str | None
    before: ConfidenceInterval | None
    after: ConfidenceInterval | None
    overlap: float | None
    overlap_signed: float | None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "term": self.term,
            "group": self.group,
            "before": None if self.before is None else self.before.to_dict(),
            "after": None if self.after is None else self.after.to_dict(),
            "overlap": self.overlap,
            "overlap_signed": self.overlap_signed,
            "note": self.note,
        }


@dataclass(frozen=True)
class EstimateComparison:
    """An :class:`Estimate` before and after: its rows, the notes on how "after" was computed, the weight
    column used and the confidence level."""

    estimate: Estimate
    rows: tuple[EstimateRow, ...]
    notes: tuple[str, ...] = ()
    weights: str | None = None
    level: float = 0.95
    removed: int = field(default=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate.text(),
            "spec": self.estimate.to_dict(),
            "weights": self.weights,
            "level": self.level,
            "records_removed": self.removed,
            "rows": [row.to_dict() for row in self.rows],
            "notes": list(self.notes),
        }


# --- interval overlap ----------------------------------------------------------------------------------------------


def interval_overlap(low_o: float, high_o: float, low_m: float, high_m: float, *, signed: bool = False) -> float | None:
    """Karr et al.'s (2006) overlap of the intervals ``[low_o, high_o]`` (original) and ``[low_m, high_m]``
    (published): ``1/2 [I / (u_o - l_o) + I / (u_m - l_m)]`` with ``I = min(u_o, u_m) - max(l_o, l_m)``, floored
    at 0 (``signed=True``: not floored, negative for disjoint intervals). Zero-width intervals as the module
    docstring says (the signed value of a point outside the other interval is None)."""
    bounds = (low_o, high_o, low_m, high_m)
    if not all(math.isfinite(float(b)) for b in bounds):
        return None
    if high_o < low_o or high_m < low_m:
        raise ParameterError("An interval's upper end must not be below its lower end.")
    inter = min(high_o, high_m) - max(low_o, low_m)
    width_o, width_m = high_o - low_o, high_m - low_m
    if width_o == 0 and width_m == 0:
        return 1.0 if low_o == low_m else (None if signed else 0.0)
    if width_o == 0 or width_m == 0:
        if inter < 0:
            return None if signed else 0.0
        return 0.5
    value = 0.5 * (inter / width_o + inter / width_m)
    return float(value) if signed else float(max(value, 0.0))


# --- published values ----------------------------------------------------------------------------------------------

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER = re.compile(rf"^{_NUM}$")
_WHOLE_RANGE = re.compile(rf"^({_NUM})\s*-\s*({_NUM})$")
_HALF_OPEN = re.compile(rf"^\[\s*({_NUM})\s*,\s*({_NUM})\s*[)\[]$")  # [a, b) and ARX's [a, b[
_OPEN = re.compile(rf"^(<=|>=|<|>)\s*({_NUM})$")


@dataclass(frozen=True)
class _Label:
    """A published numeric label: a point, a closed interval (``lo``..``hi``, ``whole``: integers, ends included),
    or an open code (``op`` and ``at``)."""

    kind: str  # "point", "closed", "open", "missing", "text"
    value: float = math.nan
    lo: float = math.nan
    hi: float = math.nan
    whole: bool = False
    op: str = ""


def _read_label(text: str) -> _Label:
    if text == TOP or text == "":
        return _Label("missing")
    if _NUMBER.match(text):
        return _Label("point", value=float(text))
    match = _WHOLE_RANGE.match(text)
    if match:
        lo, hi = float(match.group(1)), float(match.group(2))
        if lo <= hi:
            return _Label("closed", value=(lo + hi) / 2, lo=lo, hi=hi + 1, whole=True)
    match = _HALF_OPEN.match(text)
    if match:
        lo, hi = float(match.group(1)), float(match.group(2))
        if lo < hi:
            return _Label("closed", value=(lo + hi) / 2, lo=lo, hi=hi)
    match = _OPEN.match(text)
    if match:
        return _Label("open", op=match.group(1), value=float(match.group(2)))
    return _Label("text")


def published_numbers(values: pd.Series) -> tuple[np.ndarray, list[str], str | None]:
    """The number each published value of a numeric column stands for (module docstring: points, interval
    midpoints, bottom and top codes; ``*`` and missing cells NaN), the notes saying how, and the reason when the
    column holds other text (then the numbers are not computable)."""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return values.to_numpy(dtype=np.float64, na_value=np.nan), [], None
    if pd.api.types.is_bool_dtype(values):
        return values.astype("float64").to_numpy(dtype=np.float64, na_value=np.nan), [], None
    present = values.notna().to_numpy()
    codes, uniques = pd.factorize(values[present], sort=False)
    texts = list(canonical_text(pd.Index(uniques, dtype=object)))
    labels = [_read_label(t) for t in texts]
    bad = [t for t, label in zip(texts, labels, strict=True) if label.kind == "text"]
    name = values.name
    if bad:
        shown = ", ".join(repr(t) for t in bad[:3])
        return (
            np.full(len(values), np.nan),
            [],
            f"'{name}' is published as text that stands for no number ({shown}).",
        )
    closed = [label for label in labels if label.kind == "closed"]
    out = np.array([label.value if label.kind != "missing" else math.nan for label in labels], dtype=np.float64)
    notes = []
    if closed:
        notes.append(f"'{name}' is published as intervals: each stands for its midpoint (35-39 for 37).")
    opened = [i for i, label in enumerate(labels) if label.kind == "open"]
    for i in opened:
        label = labels[i]
        at = label.value
        upward = label.op.startswith(">")
        if not closed:
            continue  # no interval beside it: the code stands for its threshold
        # The closed interval nearest the code gives the width of the open one.
        if upward:
            near = min(closed, key=lambda c: abs(c.hi - (at + (1 if label.op == ">" and c.whole else 0))))
        else:
            near = min(closed, key=lambda c: abs(c.lo - (at + (1 if label.op == "<=" and c.whole else 0))))
        width = near.hi - near.lo
        if near.whole:
            # Whole numbers: ">=80" holds 80..80+w-1, "<20" holds 20-w..19 (">" and "<=" shift by one).
            first = at + (1 if label.op == ">" else 0) if upward else at - width + (1 if label.op == "<=" else 0)
            out[i] = first + (width - 1) / 2
        else:
            out[i] = at + width / 2 if upward else at - width / 2
    if opened:
        codes_text = ", ".join(texts[i] for i in opened[:4])
        how = (
            "each as the midpoint of an interval as wide as the nearest published interval"
            if closed
            else "each at its threshold"
        )
        notes.append(f"'{name}' has bottom or top codes ({codes_text}): {how}.")
    result = np.full(len(values), np.nan)
    result[present] = out[codes] if len(codes) else np.zeros(0)
    return result, notes, None


def _category_texts(values: pd.Series) -> np.ndarray:
    """Canonical text of each value; missing and ``*`` as None."""
    out = np.full(len(values), None, dtype=object)
    present = values.notna().to_numpy()
    if present.any():
        codes, uniques = pd.factorize(values[present], sort=False)
        texts = np.asarray(canonical_text(pd.Index(uniques, dtype=object)), dtype=object)
        texts[texts == TOP] = None
        out[present] = texts[codes]
    return out


# --- estimation on one table ---------------------------------------------------------------------------------------

Key = tuple[str, str | None]


@dataclass
class _Side:
    values: dict[Key, ConfidenceInterval] = field(default_factory=dict)
    categories: dict[str, set[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None
    used: int = 0
    excluded: int = 0
    reference: dict[str, str] = field(default_factory=dict)
    category: dict[Key, str] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)
    moved: list[str] = field(default_factory=list)


class _NotComputable(Exception):
    """The estimate cannot be computed on the published table (the message says why)."""


class _TooMany(_NotComputable):
    """The estimate would have more numbers than allowed (refused on the original table too)."""


def _weights(frame: pd.DataFrame, column: str | None, published: bool) -> np.ndarray:
    if column is None:
        return np.ones(len(frame))
    if column not in frame.columns:
        raise _NotComputable(f"the weight column '{column}' is not published.")
    series = frame[column]
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        if published:
            raise _NotComputable(f"the weight column '{column}' is not published as numbers.")
        raise ColumnError(f"The weight column '{column}' must hold numbers.")
    w = series.to_numpy(dtype=np.float64, na_value=np.nan)
    if (w[np.isfinite(w)] < 0).any() or np.isinf(w).any():
        if published:
            raise _NotComputable(f"the weight column '{column}' holds negative or infinite weights.")
        raise ColumnError(f"The weight column '{column}' holds negative or infinite weights.")
    return w


def _numbers(frame: pd.DataFrame, column: str, published: bool, notes: list[str]) -> np.ndarray:
    series = frame[column]
    if not published:
        if not pd.api.types.is_numeric_dtype(series):
            raise ColumnError(
                f"'{column}' is not numeric: a mean, total or regression needs numbers (a share of a category: "
                f"share:{column}=value)."
            )
        values = np.array(series.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
        values[~np.isfinite(values)] = np.nan
        return values
    values, more, problem = published_numbers(series)
    if problem is not None:
        raise _NotComputable(problem)
    notes.extend(more)
    return values


def _variance_factor(n: int) -> float:
    if n < 2:
        raise _NotComputable("fewer than two records have every value it needs.")
    return n / (n - 1)


def _intervals(
    est: np.ndarray, var: np.ndarray, n: int, z: float, records: np.ndarray | None = None
) -> list[ConfidenceInterval]:
    se = np.sqrt(np.maximum(var, 0.0))
    counts = np.full(len(est), n, dtype=np.int64) if records is None else np.rint(records).astype(np.int64)
    return [
        ConfidenceInterval(float(e), float(s), float(e - z * s), float(e + z * s), n, int(c))
        for e, s, c in zip(est, se, counts, strict=True)
    ]


def _domain(
    y: np.ndarray, w: np.ndarray, g: np.ndarray, groups: int, kind: str, z: float, counted: np.ndarray | None = None
) -> list[ConfidenceInterval | None]:
    """Means or totals of ``y`` over each group ``g`` (domain estimates, linearized variance over all records);
    ``records`` of each: the group's records, or those of them where ``counted`` (an indicator) is 1."""
    n = len(y)
    records = np.bincount(g, weights=counted, minlength=groups)
    factor = _variance_factor(n)
    weight = np.bincount(g, weights=w, minlength=groups)
    total = np.bincount(g, weights=w * y, minlength=groups)
    if kind == "total":
        wy = w * y
        var = factor * (np.bincount(g, weights=wy * wy, minlength=groups) - total**2 / n)
        return list(_intervals(total, var, n, z, records))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / weight
        resid = w * (y - mean[g])
        var = factor * np.bincount(g, weights=resid * resid, minlength=groups) / weight**2
    return [iv if weight[j] > 0 else None for j, iv in enumerate(_intervals(mean, var, n, z, records))]


def _joint_codes(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """A code per record for the combination of its values in ``arrays`` (text, no missing value), and the
    combination of each code, in sorted order; one column at a time, as integers."""
    codes = np.zeros(len(arrays[0]), dtype=np.int64)
    labels: list[tuple[str, ...]] = [()]
    for values in arrays:
        column, uniques = pd.factorize(values, sort=True)
        k = max(len(uniques), 1)
        joint, combos = pd.factorize(codes * k + column, sort=True)
        names = [str(u) for u in uniques]
        labels = [(*labels[int(c) // k], names[int(c) % k]) for c in combos]
        codes = np.asarray(joint, dtype=np.int64)
    return codes, labels


def _group_label(names: Sequence[str], values: Sequence[Any]) -> str:
    return ", ".join(f"{name} = {value}" for name, value in zip(names, values, strict=True))


def _side(
    frame: pd.DataFrame,
    spec: Estimate,
    weights: str | None,
    published: bool,
    z: float,
    reference: Mapping[str, str],
    wanted: Sequence[str] = (),
) -> _Side:
    side = _Side()
    try:
        missing = [c for c in spec.columns if c not in frame.columns]
        if missing:
            raise _NotComputable(f"'{missing[0]}' is not published.")
        w = _weights(frame, weights, published)
        numeric_columns: list[str] = []
        if spec.kind in ("mean", "total", "coef"):
            numeric_columns.append(spec.column)
        if spec.kind == "coef":
            for p in spec.predictors:
                series = frame[p]
                if p in spec.categorical:
                    continue
                if not published:
                    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
                        numeric_columns.append(p)
                elif p not in reference:
                    numeric_columns.append(p)
        numbers = {c: _numbers(frame, c, published, side.notes) for c in numeric_columns}
        texts = {c: _category_texts(frame[c]) for c in spec.columns if c not in numbers}
        for c, t in texts.items():
            side.categories[c] = {str(v) for v in pd.unique(t) if v is not None}
        ok = np.isfinite(w)
        for values in numbers.values():
            ok &= np.isfinite(values)
        for t in texts.values():
            ok &= t != None  # noqa: E711 -- elementwise
        side.used, side.excluded = int(ok.sum()), int((~ok).sum())
        w = w[ok]
        kept_numbers = {c: v[ok] for c, v in numbers.items()}
        kept_texts = {c: t[ok] for c, t in texts.items()}
        if spec.kind == "coef":
            _regression(side, spec, kept_numbers, kept_texts, w, z, reference)
        else:
            _descriptive(side, spec, kept_numbers, kept_texts, w, z, wanted)
    except _TooMany as exc:
        if not published:
            raise ParameterError(f"{spec.text()} is too large: {exc}") from None
        side.problem = str(exc)
    except _NotComputable as exc:
        side.problem = str(exc)
    return side


def _descriptive(
    side: _Side,
    spec: Estimate,
    numbers: Mapping[str, np.ndarray],
    texts: Mapping[str, np.ndarray],
    w: np.ndarray,
    z: float,
    wanted: Sequence[str],
) -> None:
    n = len(w)
    if n == 0:
        raise _NotComputable("no record has every value it needs.")
    group_names: list[str | None] = [None]
    g = np.zeros(n, dtype=np.int64)
    if spec.by and spec.kind != "crosstab":
        g, keys = _joint_codes([texts[c] for c in spec.by])
        group_names = [_group_label(spec.by, key) for key in keys]
    if len(group_names) > MAX_TERMS:
        raise _TooMany(f"it has {len(group_names):,} groups, more than the {MAX_TERMS:,} an estimate may have.")
    if spec.kind in ("mean", "total"):
        intervals = _domain(numbers[spec.column], w, g, len(group_names), spec.kind, z)
        term = f"{spec.kind} of {spec.column}"
        for name, interval in zip(group_names, intervals, strict=True):
            if interval is not None:
                side.values[(term, name)] = interval
        return
    columns = spec.columns if spec.kind == "crosstab" else (spec.column,)
    codes, keys = _joint_codes([texts[c] for c in columns])
    labels = [_group_label(columns, key) if spec.kind == "crosstab" else key[0] for key in keys]
    present = set(labels)
    categories = [spec.category] if spec.category is not None else sorted(present | set(wanted))
    n_groups = len(group_names)
    if len(categories) * n_groups > MAX_TERMS:
        raise _TooMany(
            f"it has {len(categories):,} categories in {n_groups:,} n_groups, more than the {MAX_TERMS:,} "
            "numbers an estimate may have."
        )
    # Every share at once: weights, squared weights and records per (group, category) from one pass.
    position = {label: j for j, label in enumerate(categories)}
    kinds = len(categories)
    cat = np.array([position.get(label, -1) for label in labels], dtype=np.int64)[codes]
    listed = cat >= 0
    joint = g[listed] * kinds + cat[listed]
    w2 = w * w
    weight = np.bincount(g, weights=w, minlength=n_groups)[:, None]
    square = np.bincount(g, weights=w2, minlength=n_groups)[:, None]
    size = n_groups * kinds
    w_gc = np.bincount(joint, weights=w[listed], minlength=size).reshape(n_groups, kinds)
    s_gc = np.bincount(joint, weights=w2[listed], minlength=size).reshape(n_groups, kinds)
    records = np.bincount(joint, minlength=size).reshape(n_groups, kinds)
    factor = _variance_factor(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = w_gc / weight
        # sum_i z_i^2 with z_i = w_i (1[c_i = c] - p) 1[i in g] / W_g, split by whether c_i = c.
        var = factor * (s_gc * (1 - share) ** 2 + (square - s_gc) * share**2) / weight**2
    for j, name in enumerate(group_names):
        if not weight[j, 0] > 0:
            continue
        for k, category in enumerate(categories):
            (interval,) = _intervals(share[j, k : k + 1], var[j, k : k + 1], n, z, records[j, k : k + 1])
            term = category if spec.kind == "crosstab" else f"share of {spec.column} = {category}"
            side.values[(term, name)] = interval
            side.category[(term, name)] = category
    side.present.update(c for c in categories if c in present)


def _gram(blocks: Sequence[tuple[np.ndarray, int]], v: np.ndarray) -> np.ndarray:
    """``sum_i v_i x_i x_i'`` for the design whose columns are the blocks (numbers: ``(values, 0)``; dummies:
    ``(codes, k)``, code -1 for the reference category), from weighted sums and counts per category: O(n) per
    pair of blocks, never the n-by-p matrix."""
    sizes = [max(k, 1) for _values, k in blocks]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    out = np.zeros((starts[-1], starts[-1]))
    for i, (xi, ki) in enumerate(blocks):
        for j in range(i, len(blocks)):
            xj, kj = blocks[j]
            if not ki and not kj:
                cell: np.ndarray = np.array([[float(np.dot(v * xi, xj))]])
            elif not ki or not kj:
                numbers, (codes, k) = (xi, blocks[j]) if not ki else (xj, blocks[i])
                hit = codes >= 0
                column = np.bincount(codes[hit], weights=(v * numbers)[hit], minlength=k)
                cell = column[None, :] if not ki else column[:, None]
            elif i == j:
                hit = xi >= 0
                cell = np.diag(np.bincount(xi[hit], weights=v[hit], minlength=ki))
            else:
                hit = (xi >= 0) & (xj >= 0)
                joint = xi[hit] * kj + xj[hit]
                cell = np.bincount(joint, weights=v[hit], minlength=ki * kj).reshape(ki, kj)
            out[starts[i] : starts[i + 1], starts[j] : starts[j + 1]] = cell
            out[starts[j] : starts[j + 1], starts[i] : starts[i + 1]] = cell.T
    return out


def _cross(blocks: Sequence[tuple[np.ndarray, int]], v: np.ndarray) -> np.ndarray:
    """``sum_i v_i x_i`` for the design of :func:`_gram`."""
    parts = []
    for values, k in blocks:
        if k:
            hit = values >= 0
            parts.append(np.bincount(values[hit], weights=v[hit], minlength=k))
        else:
            parts.append(np.array([float(np.dot(v, values))]))
    return np.concatenate(parts)


def _predict(blocks: Sequence[tuple[np.ndarray, int]], beta: np.ndarray) -> np.ndarray:
    """``X beta`` for the design of :func:`_gram`."""
    fitted = np.zeros(len(blocks[0][0]))
    start = 0
    for values, k in blocks:
        if k:
            fitted += np.append(beta[start : start + k], 0.0)[values]  # code -1: the reference, 0
        else:
            fitted += beta[start] * values
        start += max(k, 1)
    return fitted


def _regression(
    side: _Side,
    spec: Estimate,
    numbers: Mapping[str, np.ndarray],
    texts: Mapping[str, np.ndarray],
    w: np.ndarray,
    z: float,
    reference: Mapping[str, str],
) -> None:
    """Weighted least squares with its sandwich covariance (module docstring): ``A = X'WX``, ``X'Wy`` and
    ``sum u_i u_i'`` from sums per category (:func:`_gram`), so a dummy-coded predictor costs no matrix column."""
    n = len(w)
    terms = ["intercept"]
    blocks: list[tuple[np.ndarray, int]] = [(np.ones(n), 0)]  # (numbers, 0) or (dummy codes, categories)
    for p in spec.predictors:
        if p in numbers:
            blocks.append((numbers[p], 0))
            terms.append(p)
            continue
        codes, uniques = pd.factorize(texts[p], sort=True)
        present = [str(u) for u in uniques]
        totals = np.bincount(codes, weights=w, minlength=len(present))
        ref = reference.get(p)
        if ref is None or ref not in present:
            if ref is not None:
                side.moved.append(p)
            ref = present[int(np.argmax(totals))] if present else ""  # ties: the first in text order
        side.reference[p] = ref
        others = [c for c in present if c != ref]
        lookup = np.array([others.index(c) if c != ref else -1 for c in present], dtype=np.int64)
        blocks.append((lookup[codes], len(others)))
        terms += [f"{p} = {c}" for c in others]
    width = len(terms)
    if width > MAX_COEFFICIENTS:
        raise _TooMany(f"it has {width:,} coefficients, more than the {MAX_COEFFICIENTS:,} allowed.")
    factor = _variance_factor(n)
    y = numbers[spec.column]
    a = _gram(blocks, w)
    scale = np.sqrt(np.diag(a))
    if n < width or not (scale > 0).all():
        raise _NotComputable(_COLLINEAR)
    scaled = a / np.outer(scale, scale)  # the same system in correlation form: its condition shows collinearity
    if np.linalg.eigvalsh(scaled).min() < 1e-10 * width:
        raise _NotComputable(_COLLINEAR)
    inverse = np.linalg.inv(scaled) / np.outer(scale, scale)  # A^-1
    beta = inverse @ _cross(blocks, w * y)
    residual = y - _predict(blocks, beta)
    cov = inverse @ (factor * _gram(blocks, (w * residual) ** 2)) @ inverse
    records = np.where(
        np.array([bool(k) for _values, k in blocks for _ in range(max(k, 1))]), _cross(blocks, np.ones(n)), n
    )
    for term, interval in zip(terms, _intervals(beta, np.diag(cov), n, z, records), strict=True):
        side.values[(f"coefficient of {term}", None)] = interval


_COLLINEAR = (
    "its predictors are collinear on these records (a predictor with one value, or categories that always go together)."
)


# --- before and after ----------------------------------------------------------------------------------------------


def _merged(before: _Side, after: _Side, columns: Iterable[str]) -> str | None:
    """A note naming a column that publishes labels the original does not have (merged categories), or None."""
    for column in columns:
        new = sorted(after.categories.get(column, set()) - before.categories.get(column, set()))
        if new:
            shown = ", ".join(new[:3]) + (", ..." if len(new) > 3 else "")
            return f"not computable after: '{column}' is published in merged categories ({shown})"
    return None


def compare_estimates(
    original: pd.DataFrame,
    published: pd.DataFrame,
    estimates: Sequence[Estimate | str | Mapping[str, Any]],
    *,
    weights: str | None = None,
    level: float = 0.95,
) -> tuple[EstimateComparison, ...]:
    """Each estimate on ``original`` and on ``published`` (the fixed table), with its confidence interval at
    ``level`` and Karr et al.'s interval overlap (module docstring for every definition).

    ``estimates``: :class:`Estimate` objects, their text (:func:`parse_estimate`) or their JSON objects.
    ``weights``: the survey-weight column (None: every record weighs 1). A spec that does not fit the original
    table (an unknown column, the mean of text) raises :class:`ColumnError` or :class:`ParameterError`; what
    cannot be computed on the published table is reported in the rows, never as 0.
    """
    fraction = check_fraction(level, "level", inclusive_zero=False, inclusive_one=False)
    z = NormalDist().inv_cdf(0.5 + fraction / 2)
    specs = [Estimate.from_dict(e) if not isinstance(e, Estimate) else e for e in estimates]
    if weights is not None:
        check_columns(original, [weights], role="weight column")
    removed = max(len(original) - len(published), 0)
    out = []
    for spec in specs:
        check_columns(original, spec.columns, role="column")
        if weights is not None and weights in spec.columns:
            raise ParameterError(f"'{weights}' is the weight column; it cannot also be a column of the estimate.")
        before = _side(original, spec, weights, False, z, {})
        if before.problem is not None:
            raise ParameterError(f"{spec.text()} cannot be computed on the original table: {before.problem}")
        if spec.kind == "share" and spec.category is not None and spec.category not in before.present:
            raise ParameterError(f"No record of the original table has {spec.column} = {spec.category}.")
        after = _side(published, spec, weights, True, z, before.reference, sorted(before.present))
        out.append(_compare(spec, before, after, weights, fraction, removed))
    return tuple(out)


def _compare(
    spec: Estimate, before: _Side, after: _Side, weights: str | None, level: float, removed: int
) -> EstimateComparison:
    rows = []
    categorical = [c for c in spec.columns if c in before.categories]
    for key, interval in before.values.items():
        note = None
        late: ConfidenceInterval | None = None
        if after.problem is not None:
            note = f"not computable after: {after.problem}"
        elif _moved(key[0], after.moved):
            note = (
                f"not comparable: the reference category of '{after.moved[0]}' "
                f"({before.reference[after.moved[0]]}) is not published"
            )
        elif key in after.values:
            late = after.values[key]
            category = before.category.get(key)
            if category is not None and category not in after.present:
                merged = _merged(before, after, categorical)
                late, note = (None, merged) if merged else (late, "no published record has this category")
        else:
            note = _merged(before, after, categorical) or "not computable after: no published record has these values"
        rows.append(_row(key, interval, late, note))
    for key, interval in after.values.items():
        if key not in before.values and not _moved(key[0], after.moved):
            rows.append(_row(key, None, interval, "a published category that is not one of the original data"))
    notes: list[str] = []
    if removed:
        notes.append(
            f"{removed:,} records are not published: the estimates after use the {after.used + after.excluded:,} "
            "published records with their weights as published."
        )
    for side, name in ((before, "before"), (after, "after")):
        if side.excluded:
            notes.append(f"{side.excluded:,} records with a missing value in its columns are left out {name}.")
    notes.extend(dict.fromkeys(after.notes))
    return EstimateComparison(spec, tuple(rows), tuple(notes), weights, level, removed)


def _moved(term: str, moved: Sequence[str]) -> bool:
    """True for the intercept and the dummies of a predictor whose reference category is not published."""
    if not moved:
        return False
    return term == "coefficient of intercept" or any(term.startswith(f"coefficient of {p} = ") for p in moved)


def _row(
    key: Key, before: ConfidenceInterval | None, after: ConfidenceInterval | None, note: str | None
) -> EstimateRow:
    overlap = signed = None
    if before is not None and after is not None:
        overlap = interval_overlap(before.low, before.high, after.low, after.high)
        signed = interval_overlap(before.low, before.high, after.low, after.high, signed=True)
    return EstimateRow(key[0], key[1], before, after, overlap, signed, note)


def estimates_table(comparisons: Iterable[EstimateComparison]) -> pd.DataFrame:
    """The comparisons as one table for display: ``estimate``, ``term``, ``group``, ``before``, ``before_low``,
    ``before_high``, ``after``, ``after_low``, ``after_high``, ``overlap``, ``note`` (NaN where not computable)."""
    records = []
    for comparison in comparisons:
        for row in comparison.rows:
            record: dict[str, Any] = {"estimate": comparison.estimate.text(), "term": row.term, "group": row.group}
            for side, interval in (("before", row.before), ("after", row.after)):
                record[side] = math.nan if interval is None else interval.value
                record[f"{side}_low"] = math.nan if interval is None else interval.low
                record[f"{side}_high"] = math.nan if interval is None else interval.high
            record["overlap"] = math.nan if row.overlap is None else row.overlap
            record["note"] = row.note
            records.append(record)
    columns = ["estimate", "term", "group", "before", "before_low", "before_high", "after", "after_low"]
    return pd.DataFrame(records, columns=[*columns, "after_high", "overlap", "note"])
