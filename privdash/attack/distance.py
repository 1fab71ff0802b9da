"""Distance to the closest record (DCR): how near each released record lies to the records it was made from.

Metric: Gower's distance, the mean over the columns of a per-column distance in [0, 1]: for a numeric column
|x - y| / range (the range, max - min, of the training and control values together; 1 when it is 0), for any
other column 0 when the values are equal and 1 otherwise. A missing value is equal to a missing value (distance 0)
and at distance 1 from any value.

- ``exact_copies``: the share of released records equal, in every compared column, to some training record
  (over every released record).
- ``median_training``: the median over the released records of the distance to the closest training record.
- ``median_control`` (with control records, which did not go into the release): the same to the closest control
  record.
- ``closer_to_training``: the share of released records closer to the training records than to the control
  records, against a random subset of the training records of the control set's size (so that 0.5 is what a
  release that learned nothing particular to its training records gives; a tie counts one half).

The distances of at most ``max_rows`` released records (sampled with ``seed``) are computed, in chunks of released
records against every training (and control) record, so the memory stays bounded (about ``CHUNK_CELLS`` floats).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import ColumnError, ParameterError, check_columns, check_positive_int

__all__ = ["CHUNK_CELLS", "DEFAULT_DISTANCE_ROWS", "GOWER", "DistanceReport", "distance_to_closest_record"]

#: Released records whose closest distances are computed, unless told otherwise.
DEFAULT_DISTANCE_ROWS = 2000
#: Distances held in memory at once (released records x reference records per chunk).
CHUNK_CELLS = 4_000_000
#: The metric's description, as reports show it.
GOWER = "Gower distance: range-scaled |x - y| for numbers, 0/1 for other values, mean over the columns"


@dataclass(frozen=True)
class DistanceReport:
    """Distances from released records to the closest training (and control) record (module docstring)."""

    exact_copies: float
    median_training: float
    median_control: float | None
    closer_to_training: float | None
    columns: tuple[str, ...]
    metric: str
    rows: int

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON values."""
        values = asdict(self)
        values["columns"] = list(self.columns)
        return values


def _numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)


def _encode(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> tuple[list[list[np.ndarray]], list[float]]:
    """Per frame, per column: floats (numeric, NaN for missing) or integer codes (others, missing its own code);
    and per column its range (0 for a non-numeric column)."""
    encoded: list[list[np.ndarray]] = [[] for _ in frames]
    ranges: list[float] = []
    for column in columns:
        numeric = all(_numeric(f[column]) for f in frames)
        if numeric:
            values = [pd.to_numeric(f[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan) for f in frames]
            reference = np.concatenate(values[:-1])  # training and control: not the released values
            spread = float(np.nanmax(reference) - np.nanmin(reference)) if np.isfinite(reference).any() else 0.0
            ranges.append(spread if spread > 0 else 1.0)
            for index, v in enumerate(values):
                encoded[index].append(v)
        else:
            joined = pd.concat([f[column].astype(object) for f in frames], ignore_index=True)
            codes, _ = pd.factorize(joined, use_na_sentinel=False)
            start = 0
            for index, frame in enumerate(frames):
                encoded[index].append(codes[start : start + len(frame)].astype(np.int64))
                start += len(frame)
            ranges.append(0.0)
    return encoded, ranges


def _closest(rows: list[np.ndarray], reference: list[np.ndarray], ranges: list[float]) -> np.ndarray:
    """For each row, the Gower distance to the closest reference record, in chunks of rows."""
    count, size = len(rows[0]), len(reference[0])
    best = np.full(count, np.inf)
    if size == 0:
        return best
    chunk = max(1, CHUNK_CELLS // size)
    for start in range(0, count, chunk):
        stop = min(start + chunk, count)
        total = np.zeros((stop - start, size), dtype=np.float32)
        for values, other, spread in zip(rows, reference, ranges, strict=True):
            left, right = values[start:stop, None], other[None, :]
            if spread > 0:
                with np.errstate(invalid="ignore"):
                    part = np.abs(left - right) / spread
                missing_left, missing_right = np.isnan(left), np.isnan(right)
                part = np.where(missing_left | missing_right, (missing_left != missing_right).astype(float), part)
                total += np.minimum(part, 1.0).astype(np.float32)
            else:
                total += left != right
        best[start:stop] = total.min(axis=1) / len(ranges)
    return best


def _exact_copies(training: pd.DataFrame, released: pd.DataFrame, columns: list[str]) -> float:
    """The share of released records equal, in every column, to some training record (missing equals missing)."""
    if len(released) == 0:
        return 0.0
    joined = pd.concat([training[columns], released[columns]], ignore_index=True).astype(object)
    hashes = pd.util.hash_pandas_object(joined.where(joined.notna(), "\x00missing"), index=False).to_numpy()
    seen = set(hashes[: len(training)].tolist())
    return float(np.mean([h in seen for h in hashes[len(training) :].tolist()]))


def distance_to_closest_record(
    training: pd.DataFrame,
    released: pd.DataFrame,
    *,
    control: pd.DataFrame | None = None,
    columns: Sequence[str] | None = None,
    max_rows: int = DEFAULT_DISTANCE_ROWS,
    seed: int = 0,
) -> DistanceReport:
    """The distances of released records to the closest training (and control) record (module docstring).

    ``columns``: those compared (default: the released table's columns, all of which must be training columns).
    """
    names = list(columns) if columns is not None else [str(c) for c in released.columns]
    check_columns(released, names, role="compared column")
    check_columns(training, names, role="compared column")
    if control is not None:
        try:
            check_columns(control, names, role="compared column")
        except ColumnError as exc:
            raise ColumnError(f"The control records lack a compared column: {exc}") from None
    limit = check_positive_int(max_rows, "max_rows")
    if len(training) == 0:
        raise ParameterError("There are no training records to measure distances to.")
    if len(released) == 0:
        raise ParameterError("The released table has no records to measure.")
    rng = np.random.default_rng(seed)
    picked = released
    if len(released) > limit:
        picked = released.iloc[np.sort(rng.choice(len(released), size=limit, replace=False))]
    frames = [training, *([control] if control is not None else []), picked]
    encoded, ranges = _encode(frames, names)
    rows = encoded[-1]
    to_training = _closest(rows, encoded[0], ranges)
    median_control = closer = None
    if control is not None and len(control):
        to_control = _closest(rows, encoded[1], ranges)
        median_control = float(np.median(to_control))
        subset = rng.choice(len(training), size=min(len(control), len(training)), replace=False)
        to_subset = _closest(rows, [values[subset] for values in encoded[0]], ranges)
        closer = float(np.mean((to_subset < to_control) + 0.5 * (to_subset == to_control)))
    return DistanceReport(
        exact_copies=_exact_copies(training, released, names),
        median_training=float(np.median(to_training)),
        median_control=median_control,
        closer_to_training=closer,
        columns=tuple(names),
        metric=GOWER,
        rows=len(picked),
    )
