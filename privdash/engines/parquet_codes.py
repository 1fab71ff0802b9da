"""The per-combination aggregate of a Parquet file counted from its dictionary codes, no text decoded.

Parquet files written by Spark, pandas (pyarrow) and DuckDB store text columns dictionary-encoded: each column
chunk holds a dictionary of its distinct values and, per row, an index into it. :func:`parquet_codes_aggregate`
reads those indices (``read_dictionary``: Arrow ``DictionaryArray`` values, no string built per row) batch by batch,
maps each batch's dictionary onto a global dictionary of the column (built as the batches arrive; a batch's mapping
is a small array indexed by its local codes) and combines the columns' global codes into one mixed-radix integer
key. While the global key space is small enough for ``numpy.bincount`` (at most 16M keys), the keys are counted into
one array of counts (see :class:`_SpanCounter`: the codes are mapped a block of columns at a time through small
tables); beyond it, the rows' global codes are grouped with a hash table (``pandas.factorize``) and the groups'
counts added. Spans of row groups (:data:`SPAN_ROWS` rows) are counted in a pool of threads (Arrow decodes and NumPy
counts without holding the GIL).

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

__all__ = [
    "BATCH_ROWS",
    "MAX_VALUES",
    "MIN_POSSIBLE_CLASSES",
    "SPAN_ROWS",
    "dictionary_encoded_text",
    "parquet_codes_aggregate",
    "possible_classes",
]

#: Rows read per batch at most (a row group is read in batches of this many rows).
BATCH_ROWS = 1 << 20
#: Rows mapped onto the global codes and counted at a time, and rows of row groups read by one thread.
SPAN_ROWS = 1 << 22
#: Keys are counted with ``bincount`` while the key space is at most this (and at most 4 times the rows);
#: beyond it with a hash table.
_BINCOUNT_KEYS = 1 << 24
#: The largest key space of a mixed-radix int64 key; beyond it the key is made dense (``pandas.factorize``) first.
_KEY_LIMIT = 1 << 62
#: The most distinct values of a column counted from its codes: beyond, its values are nearly all distinct (an
#: identifier, free text), the global dictionary (a Python ``dict``) costs more than DuckDB's GROUP BY, and the
#: file is left to DuckDB.
MAX_VALUES = 2_000_000


class _TooManyValues(Exception):
    """A column has more than :data:`MAX_VALUES` distinct values."""


#: Below this many possible classes (the product of the first row group's dictionary sizes, a missing value
#: counted as one more), DuckDB's hash aggregate is cheaper than decoding every index: measured on 50M rows x 8
#: columns, 8,748 classes took 1.18x DuckDB's CPU from the codes, 1,265,662 classes 0.43x (BENCHMARKS.md).
MIN_POSSIBLE_CLASSES = 100_000


def possible_classes(path: str | os.PathLike[str], columns: Sequence[str]) -> int:
    """The product over ``columns`` of the number of values in the first row group's dictionary (plus one for a
    missing value): a lower bound of the classes the file can hold, read from one row group."""
    import pyarrow.parquet as pq

    names = [str(name) for name in columns]
    group = pq.ParquetFile(path, read_dictionary=names).read_row_group(0, columns=names)
    product = 1
    for name in names:
        chunks = group.column(name).chunks
        product *= max((len(chunk.dictionary) for chunk in chunks if hasattr(chunk, "dictionary")), default=1) + 1
    return product


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
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [str(name) for name in columns]
    if not names or not dictionary_encoded_text(path, names):
        return None
    metadata = pq.read_metadata(path)
    spans: list[list[int]] = [[]]
    rows = 0
    for group in range(metadata.num_row_groups):
        if rows >= SPAN_ROWS:
            spans.append([])
            rows = 0
        spans[-1].append(group)
        rows += metadata.row_group(group).num_rows
    workers = max(1, min(threads or os.cpu_count() or 1, len(spans), 4))
    dictionaries = [_GlobalDictionary() for _ in names]
    local = threading.local()

    def count_span(
        groups: list[int],
    ) -> tuple[dict[tuple[int, ...], np.ndarray], list[tuple[list[np.ndarray], np.ndarray]]]:
        handle = getattr(local, "file", None)
        if handle is None:
            handle = local.file = pq.ParquetFile(path, read_dictionary=names)
        counter = _SpanCounter(dictionaries)
        for group in groups:
            for batch in handle.iter_batches(
                batch_size=BATCH_ROWS, row_groups=[group], columns=names, use_threads=False
            ):
                counter.add(batch)
        return counter.result()

    merged = _Partials(len(names))
    try:
        if workers == 1:
            results: Any = map(count_span, spans)
            for dense, parts in results:
                merged.add_dense(dense)
                merged.add(parts, dictionaries)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for dense, parts in pool.map(count_span, spans):
                    merged.add_dense(dense)
                    merged.add(parts, dictionaries)
    except (pa.ArrowException, OSError):
        return None  # a file that cannot be read as its footer says: DuckDB reads it, or says what is wrong
    except _TooManyValues:
        return None
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
            if len(self.values) > MAX_VALUES:
                raise _TooManyValues
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


class _SpanCounter:
    """The combinations of the batches of a span of row groups and their counts.

    While the global key space (the global dictionaries' sizes multiplied) is small enough for ``bincount``, each
    row's global key is computed without mapping each code: the columns are cut into blocks whose local key space
    (the batch's dictionaries' sizes multiplied) is at most :data:`_BLOCK_KEYS`; a row's local key in a block
    indexes a small table of that block's share of the global key (built from the dictionaries' mappings), and the
    shares add up. The keys of up to :data:`SPAN_ROWS` rows are then counted by one ``bincount``. Beyond, each code
    is mapped onto its global code and the rows are grouped with a hash table."""

    def __init__(self, dictionaries: list[_GlobalDictionary]) -> None:
        self.dictionaries = dictionaries
        self.parts: list[tuple[list[np.ndarray], np.ndarray]] = []
        self.buffered: list[list[np.ndarray]] = []
        self.keys: list[np.ndarray] = []
        self.sizes: list[int] = []
        #: Counts by global key, by the global dictionaries' sizes the keys were computed with.
        self.dense: dict[tuple[int, ...], np.ndarray] = {}
        self.rows = 0

    def add(self, batch: Any) -> None:
        columns = [_local_codes(batch.column(i)) for i in range(len(self.dictionaries))]
        mappings = [
            [dictionary.mapping(local_dictionary) for _, local_dictionary in parts]
            for parts, dictionary in zip(columns, self.dictionaries, strict=True)
        ]
        sizes = [dictionary.size for dictionary in self.dictionaries]
        # Keys are computed with the sizes of the dictionaries: while they grow (new values in this batch), the
        # batch's codes are mapped and kept, and the keys so far are counted with the sizes they were made with.
        stable = sizes == self.sizes
        if not stable:
            self._count_keys()
            self.sizes = sizes
        if stable and all(len(parts) == 1 for parts in columns) and _bincount_fits(sizes, SPAN_ROWS):
            keys = _global_keys([parts[0][0] for parts in columns], [m[0] for m in mappings], sizes)
            space = int(np.prod(sizes, dtype=np.float64))
            if space <= batch.num_rows:  # a key space smaller than the batch: counted at once
                _add_dense(self.dense, tuple(sizes), np.bincount(keys, minlength=space), self.parts)
            else:
                self.keys.append(keys)
        else:
            self.buffered.append(
                [
                    np.concatenate([mapped[local] for (local, _), mapped in zip(parts, maps, strict=True)])
                    for parts, maps in zip(columns, mappings, strict=True)
                ]
            )
        self.rows += batch.num_rows
        if self.rows >= SPAN_ROWS:
            self._flush()

    def _count_keys(self) -> None:
        if self.keys:
            space = int(np.prod(self.sizes, dtype=np.float64))
            counts = np.bincount(np.concatenate(self.keys), minlength=space)
            self.keys = []
            _add_dense(self.dense, tuple(self.sizes), counts, self.parts)

    def _flush(self) -> None:
        self._count_keys()
        if self.buffered:
            codes = [np.concatenate([batch[j] for batch in self.buffered]) for j in range(len(self.dictionaries))]
            self.buffered = []
            self.parts.append(_group(codes, [dictionary.size for dictionary in self.dictionaries], _NO_WEIGHTS))
        self.rows = 0

    def result(self) -> tuple[dict[tuple[int, ...], np.ndarray], list[tuple[list[np.ndarray], np.ndarray]]]:
        """The counts by global key (by the sizes of the key) and the other batches' combinations and counts."""
        self._flush()
        return self.dense, self.parts


def _add_dense(
    dense: dict[tuple[int, ...], np.ndarray],
    signature: tuple[int, ...],
    counts: np.ndarray,
    parts: list[tuple[list[np.ndarray], np.ndarray]],
) -> None:
    """Add counts by global key (keys made with the sizes ``signature``) to ``dense``, which keeps the counts of one
    signature: those of another are turned into combinations and counts, into ``parts``."""
    if signature in dense:
        dense[signature] += counts
        return
    for other, other_counts in dense.items():
        found = np.flatnonzero(other_counts)
        parts.append((_decode(found, list(other)), other_counts[found].astype(np.int64)))
    dense.clear()
    dense[signature] = counts


#: The largest local key space of a block of columns (:class:`_SpanCounter`).
_BLOCK_KEYS = 1 << 14


def _global_keys(local: list[np.ndarray], mappings: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """The mixed-radix keys of the global codes (below ``sizes``) of rows of local codes (``mappings[j][code]`` is
    the global code of column ``j``'s local code), a block of columns at a time (see :class:`_SpanCounter`)."""
    strides = [1] * len(sizes)
    for j in range(len(sizes) - 2, -1, -1):
        strides[j] = strides[j + 1] * sizes[j + 1]
    kind: Any = np.int32 if strides[0] * sizes[0] < 2**31 else np.int64
    key: Any = None
    j = 0
    while j < len(local):
        # A block: columns j..k-1, local key (l_j * s_j+1 + l_j+1) ..., table of their global shares.
        table: Any = mappings[j].astype(kind) * kind(strides[j])
        block: Any = local[j].astype(kind)
        k = j + 1
        while k < len(local) and len(table) * len(mappings[k]) <= _BLOCK_KEYS:
            table = np.add.outer(table, mappings[k].astype(kind) * kind(strides[k])).ravel()
            block *= kind(len(mappings[k]))
            block += local[k]
            k += 1
        shares = table[block]
        if key is None:
            key = shares
        else:
            key += shares
        j = k
    return np.asarray(key)


def _decode(keys: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """The codes (int32) of mixed-radix ``keys`` over ``sizes``, one array a column."""
    rest = keys
    decoded: list[np.ndarray] = []
    for size in reversed(sizes[1:]):
        rest, code = np.divmod(rest, size)
        decoded.append(code.astype(np.int32))
    decoded.append(rest.astype(np.int32))
    return decoded[::-1]


_NO_WEIGHTS = np.ones(0, dtype=np.int64)


def _bincount_fits(sizes: list[int], rows: int) -> bool:
    """Whether the mixed-radix keys of ``rows`` rows of codes below ``sizes`` are counted by ``bincount``: a key
    space of at most :data:`_BINCOUNT_KEYS` and four times the rows."""
    space = 1
    for size in sizes:
        space *= size
        if space > _BINCOUNT_KEYS:
            return False
    return space <= max(4 * rows, 1 << 16)


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
    if dense and _bincount_fits(sizes, rows):
        counts = np.bincount(key, weights=weights if len(weights) else None, minlength=space)
        found = np.flatnonzero(counts)
        return _decode(found, sizes), counts[found].astype(np.int64)
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
        self.dense: dict[tuple[int, ...], np.ndarray] = {}

    def add(self, parts: list[tuple[list[np.ndarray], np.ndarray]], dictionaries: list[_GlobalDictionary]) -> None:
        for part in parts:
            self.parts.append(part)
            self.rows += len(part[1])
        if self.rows > 2 * self.merged_rows + BATCH_ROWS * 4:
            self.parts = [self.result(dictionaries)]
            self.rows = self.merged_rows = len(self.parts[0][1])

    def add_dense(self, dense: dict[tuple[int, ...], np.ndarray]) -> None:
        """Add counts by global key (by the sizes of the key)."""
        for signature, counts in dense.items():
            _add_dense(self.dense, signature, counts, self.parts)

    def result(self, dictionaries: list[_GlobalDictionary]) -> tuple[list[np.ndarray], np.ndarray]:
        for signature, counts in self.dense.items():
            found = np.flatnonzero(counts)
            self.parts.append((_decode(found, list(signature)), counts[found].astype(np.int64)))
        self.dense = {}
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
