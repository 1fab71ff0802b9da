"""A table's fingerprint: digests that recognise a table's content without the differential-privacy machinery.

:class:`TableFingerprint` is what the privacy-budget ledger (:mod:`privdash.dp.ledger`) and the report's provenance
key a table by; it does not depend on the order of rows or columns or on how numbers are typed (``30`` and ``30.0``
are one value):

- ``digest``: the SHA-256 of the sorted column names and the sorted row hashes (a row hash combines the hashes of
  its cells' category text, see :func:`row_hashes`). Equal digests are the same multiset of rows.
- ``sketch``: the :data:`SKETCH_SIZE` smallest hashes of the rows, each row hashed with its occurrence number among
  equal rows (a bottom-k sketch of the row multiset; Broder 1997, Cohen and Kaplan 2007), from which
  :meth:`TableFingerprint.overlap` estimates the share of rows two tables have in common.

A cell's **category text** (:func:`category_text`) is the rule differentially private releases also match declared
domains by, so it lives here and :mod:`privdash.dp.release` uses it: this module imports only NumPy, pandas and the
core's text rules, never OpenDP, so fingerprinting a table is as fast as hashing it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import DataReadError
from privdash.measure.classes import MISSING_LABEL
from privdash.transform.hierarchy import canonical_text

__all__ = [
    "SKETCH_SIZE",
    "TableFingerprint",
    "category_text",
    "file_sha256",
    "frame_sha256",
    "row_hashes",
]

#: Rows kept in a table's sketch (bottom-k): the estimated overlap has a standard error of at most 1/(2·sqrt(k)).
SKETCH_SIZE = 256

#: Text that spells a number in decimal without a leading zero (``30``, ``30.0``, ``-2.5``, ``3e1``, ``.5``).
_NUMERAL = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")


def category_text(values: Sequence[Any] | pd.Index) -> pd.Index:
    """The category of each value, as text: its canonical text (integral numbers without decimals, see
    :func:`~privdash.transform.hierarchy.canonical_text`), where text that spells a number is that number's
    canonical text (``"30.0"``, ``"3e1"`` and ``"+30"`` are ``30``). Text with a leading zero (``007``) is a code,
    not a number, and stays as it is. Declared domains and the data go through the same rule, so they match by
    value."""
    labels = canonical_text(values if isinstance(values, pd.Index) else list(values))
    if isinstance(values, pd.Index) and values.dtype.kind in "iufb":
        return labels  # numbers: their canonical text is already the category
    text = np.asarray(labels, dtype=object)
    for position, label in enumerate(text):
        if isinstance(label, str) and _NUMERAL.fullmatch(label):
            number: Any = int(label) if _INTEGER.fullmatch(label) else float(label)
            text[position] = canonical_text([number])[0]
    return pd.Index(text, dtype=object)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (hex): the key of a dataset in version-1 ledgers of the command line."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise DataReadError(f"Cannot read {path} to fingerprint it: {exc.strerror or exc}.") from None
    return digest.hexdigest()


def frame_sha256(data: pd.DataFrame) -> str:
    """The SHA-256 of a table's column names and cells in row order (hex): the key of a dataset in version-1
    ledgers of the dashboard."""
    digest = hashlib.sha256(json.dumps([str(c) for c in data.columns]).encode("utf-8"))
    digest.update(pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _mix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 values (wrapping arithmetic): a well-spread 64-bit hash of each value."""
    x = values.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def row_hashes(data: pd.DataFrame) -> np.ndarray:
    """One uint64 per row, independent of the column order and of how numbers are typed: each cell is hashed as
    ``column name + U+001F + category text`` (:func:`category_text`, missing as
    ``(missing)``) with pandas' ``hash_array`` (once per distinct value), and the cells of a row are combined in the
    order of the column names."""

    hashes = np.zeros(len(data), dtype=np.uint64)
    order = sorted(range(data.shape[1]), key=lambda i: str(data.columns[i]))
    for position in order:
        codes, uniques = pd.factorize(data.iloc[:, position], use_na_sentinel=True)
        labels = np.append(np.asarray(category_text(pd.Index(uniques)), dtype=object), MISSING_LABEL)
        keyed = (str(data.columns[position]) + "\x1f") + labels.astype(object)
        cell_hashes = pd.util.hash_array(np.asarray(keyed, dtype=object), categorize=False)  # already distinct
        with np.errstate(over="ignore"):
            hashes = _mix(hashes * np.uint64(0x9E3779B97F4A7C15) + cell_hashes[codes])
    return hashes


@dataclass(frozen=True)
class TableFingerprint:
    """What the ledger remembers of a released table: ``digest`` (SHA-256 of the sorted column names and row hashes;
    equal for the same rows in any order), ``rows``, and ``sketch``, the smallest :data:`SKETCH_SIZE` hashes of the
    row multiset (sorted), from which :meth:`overlap` estimates the rows two tables have in common."""

    digest: str
    rows: int
    sketch: tuple[int, ...]

    @classmethod
    def of(cls, data: pd.DataFrame) -> TableFingerprint:
        """The fingerprint of ``data`` (vectorised: one hash per distinct cell value, then array operations)."""
        ordered = np.sort(row_hashes(data))
        digest = hashlib.sha256(b"privdash rows v1\x00")
        digest.update(json.dumps(sorted(str(c) for c in data.columns), ensure_ascii=False).encode("utf-8"))
        digest.update(ordered.tobytes())
        # Equal rows stay distinct elements of the multiset: the j-th copy of a row is hashed with j.
        positions = np.arange(len(ordered))
        starts = np.ones(len(ordered), dtype=bool)
        starts[1:] = ordered[1:] != ordered[:-1]
        occurrence = (positions - np.maximum.accumulate(np.where(starts, positions, 0))).astype(np.uint64)
        elements = _mix(ordered ^ _mix(occurrence + np.uint64(0x632BE59BD9B4E019)))
        if len(elements) > SKETCH_SIZE:
            elements = np.partition(elements, SKETCH_SIZE - 1)[:SKETCH_SIZE]
        sketch = np.unique(elements)
        return cls(digest.hexdigest(), len(data), tuple(int(v) for v in sketch))

    def overlap(self, other: TableFingerprint) -> float:
        """The estimated share of the smaller table's rows that are rows of the other (0 to 1), from the bottom-k
        sketches: J = |sketch(A ∪ B) ∩ A ∩ B| / |sketch(A ∪ B)|, |A ∩ B| = J/(1 + J) · (|A| + |B|)."""
        if self.digest == other.digest:
            return 1.0
        mine, theirs = set(self.sketch), set(other.sketch)
        union = sorted(mine | theirs)[:SKETCH_SIZE]
        if not union or not min(self.rows, other.rows):
            return 0.0
        jaccard = sum(1 for value in union if value in mine and value in theirs) / len(union)
        common = jaccard / (1 + jaccard) * (self.rows + other.rows)
        return min(common / min(self.rows, other.rows), 1.0)
