"""Disclosure risk and information loss of perturbed numerical data (noise, swapping, microaggregation ...).

Once values are noisy or swapped, every record may be unique and k says nothing: the question is whether an
intruder who knows a person's true values can find that person's published record, and how close the published
values are to the true ones. Both are measured by comparing the original table ``X`` with the perturbed one ``X'``,
record by record (same rows, same order), on the ``p`` numerical columns given. ``sd_j`` is the sample standard
deviation (n - 1, as R's ``sd``) of column ``j``; ``n`` the number of records.

Risk
----
* **Distance-based record linkage** (Domingo-Ferrer & Torra 2001, "A quantitative comparison of disclosure control
  methods for microdata", in *Confidentiality, Disclosure and Data Access*, North-Holland; as in sdcMicro's
  record-linkage studies): every column of both tables is standardised with the *original* column's mean and
  ``sd_j`` (a missing value counts as the mean, z = 0; a constant column is only centred). Each perturbed record is
  linked to the original record nearest to it in Euclidean distance. ``linkage`` is the share of perturbed records
  linked to their own original; when ``t`` original records tie at the nearest distance (within a relative 1e-9)
  and the record's own is among them, it counts ``1 / t`` (the intruder picks one at random). Searched with a k-d
  tree (:class:`scipy.spatial.cKDTree`).
* **Interval disclosure** (Mateo-Sanz, Sebe & Domingo-Ferrer 2004, "Outlier protection in continuous microdata
  masking", PSD 2004, LNCS 3050, method SDID; sdcMicro ``dRisk``): around each perturbed value an interval
  ``[x'_ij - k s'_j, x'_ij + k s'_j]`` is built, with ``s'_j`` the standard deviation of the *perturbed* column and
  sdcMicro's default ``k = 0.05``. A record is at risk when the interval contains the original value in every
  column (missing values are ignored); ``interval_disclosure`` is the share of records at risk, exactly sdcMicro's
  ``dRiskWORK``: ``mean(rowSums(x < xm - k sd(xm) | x > xm + k sd(xm), na.rm = TRUE) == 0)``.
  ``interval_disclosure_values`` is the same test cell by cell: the share of non-missing cells whose interval
  contains the original value.

Utility
-------
* **IL1s** (Yancey, Winkler & Creecy 2002, "Disclosure risk assessment in perturbative microdata protection",
  LNCS 2316): the mean over the non-missing cells of ``|x_ij - x'_ij| / (sqrt(2) sd_j)``. 0 = unchanged; for
  independent noise of standard deviation ``s * sd_j`` its expectation is ``s / sqrt(pi)``. sdcMicro's current
  ``dUtility(method = "IL1s")`` returns the *sum* of these terms, reported as ``il1s_sum``; its ``"IL1old"``, the
  mean over all ``n p`` cells, equals ``il1s`` when no value is missing.
* **Relative change of means, variances and correlations**: ``mean_change`` is the mean over the columns of
  ``|m'_j - m_j| / |m_j|``; ``variance_change`` the mean of ``|v'_j - v_j| / v_j`` (sample variances);
  ``correlation_change`` the mean over column pairs of ``|r'_jl - r_jl| / |r_jl|`` (Pearson correlations, pairwise
  complete). Columns or pairs whose original statistic is 0 are left out (the change is reported as ``None`` when
  none is left); ``correlation_abs_change`` is the mean of ``|r'_jl - r_jl|`` over all pairs, defined even then.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import ColumnError, ParameterError, check_columns, check_threshold, format_values

__all__ = ["DEFAULT_INTERVAL_K", "PerturbationRisk", "perturbation_risk"]

#: sdcMicro's default ``k`` of ``dRisk``: the interval's half-width as a share of the perturbed column's sd.
DEFAULT_INTERVAL_K = 0.05

# Distances within this relative margin of the nearest one count as ties (rounding in the tree search).
_TIE_TOLERANCE = 1e-9
#: The largest magnitude compared: squares and sums of the values must stay within the floating-point range.
_LARGEST_VALUE = 1e150


@dataclass(frozen=True)
class PerturbationRisk:
    """Risk and utility of a perturbed table against its original (definitions in the module docstring).

    Attributes
    ----------
    records, columns
        Records compared and the numerical columns used.
    linkage
        Share of perturbed records whose nearest original record is their own (ties shared).
    linked_records
        The expected number of records linked correctly (``linkage * records``).
    interval_disclosure
        sdcMicro's ``dRisk``: share of records whose original values all lie in their perturbed value's interval.
    interval_disclosure_values
        The same test per cell: share of non-missing cells inside their interval.
    interval_k
        The interval half-width as a share of the perturbed column's standard deviation.
    il1s, il1s_sum
        Mean (Yancey, Winkler & Creecy) and sum (sdcMicro ``dUtility``) of ``|x - x'| / (sqrt(2) sd)``.
    mean_change, variance_change, correlation_change, correlation_abs_change
        Mean relative change of the column means, variances and pairwise correlations (absolute for the last).
    per_column
        Per column: ``il1s``, ``interval_disclosure`` (share of its cells inside their interval),
        ``mean_change``, ``variance_change``.
    """

    records: int
    columns: tuple[str, ...]
    linkage: float
    linked_records: float
    interval_disclosure: float
    interval_disclosure_values: float
    interval_k: float
    il1s: float
    il1s_sum: float
    mean_change: float | None
    variance_change: float | None
    correlation_change: float | None
    correlation_abs_change: float | None
    per_column: Mapping[str, Mapping[str, float | None]]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["columns"] = list(self.columns)
        out["per_column"] = {name: dict(values) for name, values in self.per_column.items()}
        return out


def perturbation_risk(
    original: pd.DataFrame,
    perturbed: pd.DataFrame,
    columns: Sequence[str],
    *,
    interval_k: float = DEFAULT_INTERVAL_K,
) -> PerturbationRisk:
    """Record linkage, interval disclosure and information loss of ``perturbed`` against ``original`` over the
    numerical ``columns`` (rows compared by position).

    Raises
    ------
    ColumnError
        A column missing from either table, or not numerical in either.
    ParameterError
        Tables of different lengths, an empty table, ``interval_k`` negative.
    """
    names = check_columns(original, columns, role="column of the original table")
    check_columns(perturbed, names, role="column of the perturbed table")
    interval_k = check_threshold(interval_k, "interval_k")
    if len(original) != len(perturbed):
        raise ParameterError(
            f"The perturbed table has {len(perturbed):,} records and the original {len(original):,}: record linkage "
            "compares them row by row, so they must hold the same records in the same order."
        )
    if len(original) == 0:
        raise ParameterError("The tables are empty: there are no records to compare.")
    x = _numeric(original, names, "original")
    y = _numeric(perturbed, names, "perturbed")
    n = len(x)

    sd = _sd(x)
    sd_perturbed = _sd(y)
    linkage = record_linkage(x, y)

    # Interval disclosure, as sdcMicro's dRiskWORK: cells with a missing value never count as outside.
    outside = (x < y - interval_k * sd_perturbed) | (x > y + interval_k * sd_perturbed)
    both = ~np.isnan(x) & ~np.isnan(y)
    inside = both & ~outside
    interval_records = float(np.mean(~outside.any(axis=1)))
    cells = int(both.sum())
    interval_values = float(inside.sum() / cells) if cells else math.nan

    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.abs(x - y) / (math.sqrt(2.0) * sd)
    terms[~both] = np.nan
    # A constant original column has sd 0: its terms are 0 when unchanged and undefined (left out) otherwise.
    terms[both & (sd == 0) & (x == y)] = 0.0
    finite = np.isfinite(terms)
    il1s_sum = float(terms[finite].sum())
    il1s = il1s_sum / int(finite.sum()) if finite.any() else math.nan

    means, means_p = np.nanmean(x, axis=0), np.nanmean(y, axis=0)
    variances, variances_p = sd**2, sd_perturbed**2
    mean_changes = _relative(means_p, means)
    variance_changes = _relative(variances_p, variances)
    correlation_change, correlation_abs_change = _correlation_changes(x, y)

    per_column: dict[str, dict[str, float | None]] = {}
    for j, name in enumerate(names):
        column_cells = int(both[:, j].sum())
        column_terms = terms[:, j][finite[:, j]]
        per_column[name] = {
            "il1s": float(column_terms.mean()) if len(column_terms) else None,
            "interval_disclosure": float(inside[:, j].sum() / column_cells) if column_cells else None,
            "mean_change": _float_or_none(mean_changes[j]),
            "variance_change": _float_or_none(variance_changes[j]),
        }
    return PerturbationRisk(
        records=n,
        columns=names,
        linkage=linkage,
        linked_records=linkage * n,
        interval_disclosure=interval_records,
        interval_disclosure_values=interval_values,
        interval_k=interval_k,
        il1s=il1s,
        il1s_sum=il1s_sum,
        mean_change=_mean_or_none(mean_changes),
        variance_change=_mean_or_none(variance_changes),
        correlation_change=correlation_change,
        correlation_abs_change=correlation_abs_change,
        per_column=per_column,
    )


def record_linkage(original: np.ndarray, perturbed: np.ndarray) -> float:
    """Share of perturbed records (rows) whose nearest original record, in the original's standardised space, is
    their own; ``t`` records tied at the nearest distance share the link (``1 / t``). Missing values count as the
    column mean."""
    means = np.nanmean(original, axis=0)
    means = np.where(np.isnan(means), 0.0, means)
    scale = _sd(original)
    scale = np.where(scale > 0, scale, 1.0)  # a constant column is centred only
    z = np.nan_to_num((original - means) / scale, nan=0.0)
    z_perturbed = np.nan_to_num((perturbed - means) / scale, nan=0.0)
    from scipy.spatial import cKDTree

    tree = cKDTree(z)
    nearest, _ = tree.query(z_perturbed, k=1)
    own = np.sqrt(((z_perturbed - z) ** 2).sum(axis=1))
    margin = _TIE_TOLERANCE * np.maximum(nearest, 1e-300)
    linked = own <= nearest + margin
    if not linked.any():
        return 0.0
    # Ties: every original record within the nearest distance (own included) is an equally good guess.
    radius = nearest[linked] + margin[linked]
    ties = np.asarray(tree.query_ball_point(z_perturbed[linked], radius, return_length=True), dtype=np.float64)
    return float((1.0 / np.maximum(ties, 1.0)).sum() / len(z))


def _numeric(data: pd.DataFrame, names: Sequence[str], which: str) -> np.ndarray:
    bad = [
        name
        for name in names
        if pd.api.types.is_bool_dtype(data[name]) or not pd.api.types.is_numeric_dtype(data[name])
    ]
    if bad:
        raise ColumnError(
            f"Record linkage and interval disclosure need numerical columns; in the {which} table "
            f"{format_values(bad)} {'is' if len(bad) == 1 else 'are'} not numerical."
        )
    values = np.column_stack([data[name].to_numpy(dtype=np.float64, na_value=np.nan) for name in names])
    with np.errstate(over="ignore", invalid="ignore"):
        # Distances square the standardised values: a column whose mean or spread overflows cannot be compared.
        spread = np.nanmax(np.abs(values), axis=0, initial=0.0)
    bad = [name for name, largest in zip(names, spread, strict=True) if not largest < _LARGEST_VALUE]
    if bad:
        raise ParameterError(
            f"Record linkage and interval disclosure need finite numbers below {_LARGEST_VALUE:.0e}; in the {which} "
            f"table {format_values(bad)} {'holds' if len(bad) == 1 else 'hold'} infinite or larger values."
        )
    return values


def _sd(x: np.ndarray) -> np.ndarray:
    """Sample standard deviation (n - 1) of each column over its non-missing values (NaN below two values)."""
    counts = (~np.isnan(x)).sum(axis=0)
    sd = np.full(x.shape[1], np.nan)
    enough = counts >= 2
    if enough.any():
        sd[enough] = np.nanstd(x[:, enough], axis=0, ddof=1)
    return sd


def _relative(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``|new - old| / |old|``, NaN where ``old`` is 0 or undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.abs(new - old) / np.abs(old)
    out[~np.isfinite(out)] = np.nan
    return out


def _correlation_changes(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    """Mean relative and mean absolute change of the pairwise-complete Pearson correlations over column pairs."""
    p = x.shape[1]
    if p < 2:
        return None, None
    upper = np.triu_indices(p, k=1)
    r = pd.DataFrame(x).corr().to_numpy()[upper]
    r_perturbed = pd.DataFrame(y).corr().to_numpy()[upper]
    absolute = np.abs(r_perturbed - r)
    return _mean_or_none(_relative(r_perturbed, r)), _mean_or_none(absolute)


def _mean_or_none(values: np.ndarray) -> float | None:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if len(finite) else None


def _float_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
