"""The per-combination aggregate of a Parquet file counted from its dictionary codes, no text decoded.

Parquet files written by Spark, pandas (pyarrow) and DuckDB store text columns dictionary-encoded: each column
chunk holds a dictionary of its distinct values and, per row, an index into it. :func:`parquet_codes_aggregate`
reads those indices (``read_dictionary``: Arrow ``DictionaryArray`` values, no string built per row) batch by batch,
maps each batch's dictionary onto a global dictionary of the column (built as the batches arrive; a batch's mapping
is a small array indexed by its local codes), combines the columns' codes into one mixed-radix ``int64`` key,
counts the keys (``numpy.bincount`` when the key space is small, a sort otherwise) and adds the batches' counts.
Batches are counted in a pool of threads (Arrow decodes and NumPy counts without holding the GIL).

The result is the DuckDB engine's aggregate to the last digit: one row per distinct combination, each text column
as pandas' Arrow-backed ``str`` (a missing value, Parquet's null, is a value of its own), and the count as
``int64``. It applies only where every requested column is text stored with a dictionary in every row group of
one file; :func:`parquet_codes_aggregate` returns ``None`` otherwise and the caller counts with DuckDB.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdash.engines.common import COUNT, pandas_index_columns

__all__ = ["BATCH_ROWS", "dictionary_encoded_text", "parquet_codes_aggregate"]

#: Rows read per batch: 8 columns of int32 codes and the int64 key take about 64 MiB a thread.
BATCH_ROWS = 1 << 20
#: Keys are counted with ``bincount`` while the key space is at most this (and at most twice the batch's rows);
#: beyond it by sorting the keys.
_BINCOUNT_KEYS = 1 << 24
#: The largest key space of a mixed-radix int64 key; beyond it the key is made dense (``numpy.unique``) first.
_KEY_LIMIT = 1 << 62


def dictionary_encoded_text(path: str | os.PathLike[str], columns: Sequence[str]) -> bool:
    """Whether ``columns`` of the Parquet file ``path`` are all text (UTF-8 strings), unique names of the file
    (not pandas index columns), stored with a dictionary page in every row group: from the footer, no data read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path)
        schema = metadata.schema.to_arrow_schema()
    except (pa.ArrowException, OSError, ValueError):
        return False
    names = [str(name) for name in schema.names]
    if metadata.num_row_groups == 0 or metadata.num_rows == 0 or metadata.num_columns != len(names):
        return False
    if any(names.count(name) != 1 for name in columns) or set(columns) & pandas_index_columns(Path(path)):
        return False
    positions = []
    for name in columns:
        kind = schema.field(name).type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            return False
        # Flat columns only: the leaf of a top-level text field has the field's position and name.
        position = names.index(name)
        if metadata.schema.column(position).path != name:
            return False
        positions.append(position)
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for position in positions:
            chunk = row_group.column(position)
            if not chunk.has_dictionary_page:
                return False
    return True


def parquet_codes_aggregate(
    path: str | os.PathLike[str], columns: Sequence[str], *, threads: int | None = None
) -> pd.DataFrame | None:
    """``SELECT columns..., COUNT(*) GROUP BY ALL`` over one Parquet file counted from its dictionary codes (see
    the module docstring); ``None`` when a column is not dictionary-encoded text (:func:`dictionary_encoded_text`),
    and the caller counts another way."""
    import pyarrow.parquet as pq

    names = [str(name) for name in columns]
    if not names or not dictionary_encoded_text(path, names):
        return None
    metadata = pq.read_metadata(path)
    workers = max(1, min(threads or os.cpu_count() or 1, metadata.num_row_groups, 4))
    dictionaries = [_GlobalDictionary() for _ in names]
    local = threading.local()

    def count_group(group: int) -> list[tuple[list[np.ndarray], np.ndarray]]:
        handle = getattr(local, "file", None)
        if handle is None:
            handle = local.file = pq.ParquetFile(path, read_dictionary=names)
        return [
            _count_batch(batch, dictionaries)
            for batch in handle.iter_batches(
                batch_size=BATCH_ROWS, row_groups=[group], columns=names, use_threads=False
            )
        ]

    merged = _Partials(len(names))
    if workers == 1:
        for group in range(metadata.num_row_groups):
            merged.add(count_group(group), dictionaries)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for parts in pool.map(count_group, range(metadata.num_row_groups)):
                merged.add(parts, dictionaries)
    codes, counts = merged.result(dictionaries)
    return _frame(names, codes, counts, dictionaries)


class _GlobalDictionary:
    """The distinct values of one column over the file, in the order first seen; code 0 is the missing value
    (null), value ``i`` has code ``i + 1``. Thread-safe."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._codes: dict[str, int] = {}
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, ...], tuple[Any, np.ndarray]] = {}

    @property
    def size(self) -> int:
        """Codes in use: the values and the missing value."""
        return len(self.values) + 1

    def mapping(self, dictionary: Any) -> np.ndarray:
        """Global codes (int32) of a batch's dictionary, by local code; its last entry is the missing value's."""
        # The batches of a row group share its dictionary's buffers: it is mapped once.
        buffers = dictionary.buffers()
        key = (len(dictionary), *(buffer.address if buffer is not None else 0 for buffer in buffers))
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                return cached[1]
            values = dictionary.to_pylist()
            mapped = np.empty(len(values) + 1, dtype=np.int32)
            for i, value in enumerate(values):
                code = self._codes.get(value)
                if code is None:
                    self.values.append(value)
                    code = self._codes[value] = len(self.values)
                mapped[i] = code
            mapped[-1] = 0
            # The dictionary is kept alive with its mapping, so that its buffers' addresses are not reused.
            if len(self._cache) >= 64:
                self._cache.clear()
            self._cache[key] = (dictionary, mapped)
            return mapped


def _local_codes(column: Any) -> list[tuple[np.ndarray, Any]]:
    """A batch's dictionary-encoded column (a DictionaryArray or chunks of them) as (local codes, dictionary) per
    chunk; a missing value has the code ``len(dictionary)``."""
    chunks = column.chunks if hasattr(column, "chunks") else [column]
    parts = []
    for chunk in chunks:
        indices = chunk.indices
        if indices.null_count:
            local = indices.fill_null(len(chunk.dictionary)).to_numpy()
        else:
            local = indices.to_numpy(zero_copy_only=False)
        parts.append((local, chunk.dictionary))
    return parts


def _count_batch(batch: Any, dictionaries: list[_GlobalDictionary]) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct combinations of a batch's global codes, one array a column, and their counts: the batch's own
    codes are counted, and only its distinct combinations are mapped onto the global codes."""
    columns = [_local_codes(batch.column(i)) for i in range(len(dictionaries))]
    if any(len(parts) > 1 for parts in columns):  # a dictionary that changes within the batch: map every row
        codes = [
            np.concatenate([dictionary.mapping(local_dictionary)[local] for local, local_dictionary in parts])
            for parts, dictionary in zip(columns, dictionaries, strict=True)
        ]
        return _group(codes, [dictionary.size for dictionary in dictionaries], np.ones(0, dtype=np.int64))
    local = [parts[0][0] for parts in columns]
    distinct, counts = _group(local, [len(parts[0][1]) + 1 for parts in columns], np.ones(0, dtype=np.int64))
    codes = [
        dictionary.mapping(parts[0][1])[codes]
        for codes, parts, dictionary in zip(distinct, columns, dictionaries, strict=True)
    ]
    return codes, counts


def _group(codes: list[np.ndarray], sizes: list[int], weights: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct rows of the code columns ``codes`` (each code of column ``j`` below ``sizes[j]``) and the number
    of rows of each (the sum of ``weights`` over them when ``weights`` is not empty)."""
    rows = len(codes[0])
    whole = int(np.prod([float(size) for size in sizes]))
    narrow = whole < 2**31 and rows < 2**31
    kind = np.int32 if narrow else np.int64
    key: Any = codes[0].astype(kind)
    space = sizes[0]
    dense = True  # the key is the plain mixed-radix number of the codes
    for column, size in zip(codes[1:], sizes[1:], strict=True):
        if space * size > _KEY_LIMIT:
            inverse, _ = pd.factorize(key)
            key = inverse.astype(np.int64)
            space = int(key.max()) + 1 if rows else 1
            dense = False
        key *= kind(size) if narrow else size
        key += column
        space *= size
    if dense and space <= _BINCOUNT_KEYS and space <= max(2 * rows, 1 << 16):
        counts = np.bincount(key, weights=weights if len(weights) else None, minlength=space)
        found = np.flatnonzero(counts)
        totals = counts[found].astype(np.int64)
        rest = found
        decoded: list[np.ndarray] = []
        for size in reversed(sizes[1:]):
            rest, code = np.divmod(rest, size)
            decoded.append(code.astype(np.int32))
        decoded.append(rest.astype(np.int32))
        return decoded[::-1], totals
    inverse, unique = pd.factorize(key)
    first = np.empty(len(unique), dtype=np.int64)
    first[inverse[::-1]] = np.arange(rows - 1, -1, -1)  # the first row of each combination
    weighted = weights if len(weights) else None
    totals = np.bincount(inverse, weights=weighted, minlength=len(unique)).astype(np.int64)
    return [np.asarray(column)[first] for column in codes], totals


class _Partials:
    """The batches' distinct combinations and counts, merged when they add up to many rows."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.parts: list[tuple[list[np.ndarray], np.ndarray]] = []
        self.rows = 0
        self.merged_rows = 0

    def add(self, parts: list[tuple[list[np.ndarray], np.ndarray]], dictionaries: list[_GlobalDictionary]) -> None:
        for part in parts:
            self.parts.append(part)
            self.rows += len(part[1])
        if self.rows > 2 * self.merged_rows + BATCH_ROWS * 4:
            self.parts = [self.result(dictionaries)]
            self.rows = self.merged_rows = len(self.parts[0][1])

    def result(self, dictionaries: list[_GlobalDictionary]) -> tuple[list[np.ndarray], np.ndarray]:
        if len(self.parts) == 1:
            return self.parts[0]
        codes = [np.concatenate([part[0][j] for part in self.parts]) for j in range(self.width)]
        counts = np.concatenate([part[1] for part in self.parts])
        return _group(codes, [d.size for d in dictionaries], counts.astype(np.float64))


def _frame(
    names: list[str], codes: list[np.ndarray], counts: np.ndarray, dictionaries: list[_GlobalDictionary]
) -> pd.DataFrame:
    """The aggregate as the DuckDB engine fetches it: text as pandas' Arrow-backed ``str`` (missing as NaN),
    the count as int64."""
    import pyarrow as pa

    text = pd.StringDtype("pyarrow", na_value=np.nan)
    columns: dict[str, Any] = {}
    for name, code, dictionary in zip(names, codes, dictionaries, strict=True):
        values = pa.array([None, *dictionary.values], type=pa.string())
        columns[name] = pd.array(values.take(pa.array(code)), dtype=text)
    columns[COUNT] = counts.astype(np.int64)
    return pd.DataFrame(columns, copy=False)
