"""Fixes out of core: a recipe applied to a CSV or Parquet source larger than memory, streamed through DuckDB.

:func:`apply_recipe_streaming` reads the source in batches of rows (DuckDB record batches; the raw table is never
held whole), applies the recipe's steps to each batch with the same step functions as
:func:`~privdash.transform.steps.apply_recipe`, and appends each result to a Parquet or CSV file. The output
equals the in-memory :func:`apply_recipe` on the whole table, row for row, because every step it accepts decides
each cell from that cell's value and from facts about the whole table computed beforehand:

* *cell-wise steps* (``generalize``, ``top_bottom_coding`` with its recorded thresholds, ``mask_identifiers``,
  ``drop_identifiers``, ``pseudonymize``, ``postcode_recoding``) map every value on its own;
* a rule-based hierarchy (age intervals, dates, postcodes ...) is rebuilt once over *all* the distinct values of
  its column and handed to every batch as an explicit table, so a batch never builds a hierarchy of its own;
* the record suppression of a ``generalize`` step (``suppress``: remove the records of classes that violate the
  targets) is decided once from the per-class aggregate of the whole table (the QIs and sensitive attributes
  after the preceding steps, one row per combination: :func:`~privdash.transform.generalization.
  violating_combinations`), and each batch drops the rows of those combinations.

Steps that need every row at once (``record_suppression`` within a suppression limit, ``local_suppression``,
``microaggregation``) are refused with a message: run them in memory.

Typing: Parquet keeps its types. A CSV is read as text and each column is typed as
:func:`~privdash.data.tables.read_table` types it, from the column's distinct values
(:func:`~privdash.engines.aggregate.type_like_the_reader`), so a batch cannot type a column differently
from another batch; the distinct values are read one column at a time.

Pseudonyms: ``pseudonymize`` checks that distinct values keep distinct pseudonyms within each batch; a collision
of two values in different batches is not detected (at the default length of 16 hex digits its probability is
negligible).
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from privdash.data.tables import arrow_frame, escape_formulas
from privdash.data.tables.parquet import _decimal_texts
from privdash.engines.aggregate import (
    COUNT,
    CsvText,
    DuckSource,
    _first_line,
    _relation,
    aggregate_table,
    duckdb_connection,
    source_paths,
    type_like_the_reader,
)
from privdash.errors import DataReadError, ParameterError, check_columns
from privdash.measure.classes import EquivalenceClasses, MissingPolicy
from privdash.measure.entities import EntityClasses
from privdash.measure.household import HouseholdRisk, record_household_risk
from privdash.measure.risk import IndividualRisk
from privdash.targets import PrivacyTargets
from privdash.transform.generalization import violating_combinations, without_combinations
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.steps import Recipe, Step, apply_step

__all__ = [
    "CLASS_SIZE",
    "HOUSEHOLD_RISK",
    "INDIVIDUAL_RISK",
    "RECORD_RISK",
    "STREAMABLE_STEPS",
    "StreamedRecipe",
    "StreamedRecords",
    "apply_recipe_streaming",
    "with_record_sizes",
    "write_person_sizes",
    "write_record_sizes",
]

#: Step kinds that can be applied batch by batch (see the module docstring).
STREAMABLE_STEPS = frozenset(
    {"generalize", "top_bottom_coding", "mask_identifiers", "drop_identifiers", "pseudonymize", "postcode_recoding"}
)
_OUTPUTS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv"}


@dataclass(frozen=True)
class StreamedRecipe:
    """What :func:`apply_recipe_streaming` wrote.

    Attributes
    ----------
    output
        The file written, or None when ``accept`` refused the result (nothing was written).
    rows_in, rows_out
        Records read from the source and written (the difference was suppressed).
    batches
        Batches streamed in the writing pass.
    passes
        Passes over the source (one per suppressing step, plus the writing pass).
    seconds
        Wall time.
    steps
        Per step: its kind, and for the batches together the cells it changed and the records it removed.
    """

    output: Path | None
    rows_in: int
    rows_out: int
    batches: int
    passes: int
    seconds: float
    steps: tuple[Mapping[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": None if self.output is None else str(self.output),
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "records_suppressed": self.rows_in - self.rows_out,
            "batches": self.batches,
            "passes": self.passes,
            "seconds": self.seconds,
            "steps": [dict(step) for step in self.steps],
        }


@dataclass(frozen=True, eq=False)
class _Stage:
    """A resolved step and, for a suppressing generalization, the combinations whose records it removes."""

    step: Step
    removed: pd.DataFrame | None = None


def apply_recipe_streaming(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    recipe: Recipe,
    output: str | os.PathLike[str],
    *,
    secrets: Mapping[str, Any] | None = None,
    batch_rows: int = 1_000_000,
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    escape_formulas_in_csv: bool = True,
    accept: Callable[[int, int], bool] | None = None,
) -> StreamedRecipe:
    """Apply ``recipe`` to ``source`` (a CSV file, a Parquet file, glob or folder) batch by batch, writing
    ``output`` (``.parquet``, ``.csv`` or ``.tsv``) without holding the table in memory.

    The file written equals ``apply_recipe(read_table(source), recipe).data`` (see the module docstring); the source
    is never modified and the output appears only when complete (written beside it, then renamed). CSV cells that a
    spreadsheet would run as formulas are escaped unless ``escape_formulas_in_csv`` is False. ``accept(rows_in,
    rows_out)``, when given, decides before the output appears whether to keep it (e.g. when a recipe removed more
    records than its limit); refused, nothing is written and ``output`` is None.

    Raises :class:`ParameterError` for steps that need the whole table, a bad ``batch_rows`` or output name, and
    :class:`DataReadError` for sources that cannot be read.
    """
    started = time.perf_counter()
    target, kind = _check_output(source, output, batch_rows)
    refused = [step.kind for step in recipe.steps if step.kind not in STREAMABLE_STEPS]
    if refused:
        raise ParameterError(
            f"Step(s) {', '.join(sorted(set(refused)))} need the whole table at once and cannot be streamed; "
            f"streamable: {', '.join(sorted(STREAMABLE_STEPS))}. Apply this recipe in memory (engine pandas)."
        )

    with _streamed(source, batch_rows, memory_limit, temp_directory) as reader:
        stages: list[_Stage] = []
        passes = 0
        for step in recipe.steps:
            stage, used_pass = _resolve(step, stages, reader, source, secrets, memory_limit, temp_directory)
            stages.append(stage)
            passes += used_pass
        rows_in, rows_out, batches, totals, kept = _write(
            reader,
            lambda batch: _run_stages(batch, stages, secrets),
            len(stages),
            target,
            kind,
            escape_formulas_in_csv,
            accept,
        )
    per_step = [
        {"kind": stage.step.kind, "cells_changed": int(totals[i, 0]), "records_suppressed": int(totals[i, 1])}
        for i, stage in enumerate(stages)
    ]
    return StreamedRecipe(
        output=target if kept else None,
        rows_in=rows_in,
        rows_out=rows_out,
        batches=batches,
        passes=passes + 1,
        seconds=time.perf_counter() - started,
        steps=tuple(per_step),
    )


@dataclass(frozen=True)
class StreamedRecords:
    """What :func:`write_record_sizes` wrote: ``rows`` records of the source, each with its class size and risk,
    in ``batches`` batches; ``dropped`` of them are in no class (the ``drop`` missing-value policy)."""

    output: Path
    rows: int
    dropped: int
    batches: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": str(self.output),
            "rows": self.rows,
            "records_in_no_class": self.dropped,
            "batches": self.batches,
            "seconds": self.seconds,
        }


#: Columns :func:`write_record_sizes` adds to every record.
CLASS_SIZE, RECORD_RISK = "class_size", "prosecutor_risk"
#: Columns it adds when given the individual risk and the household risk.
INDIVIDUAL_RISK, HOUSEHOLD_RISK = "individual_risk", "household_risk"


def write_record_sizes(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    classes: EquivalenceClasses,
    output: str | os.PathLike[str],
    *,
    batch_rows: int = 1_000_000,
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    escape_formulas_in_csv: bool = True,
    individual: IndividualRisk | None = None,
    households: HouseholdRisk | None = None,
    household: str | None = None,
    class_values: Mapping[str, np.ndarray] | None = None,
) -> StreamedRecords:
    """Write every record of ``source`` with two more columns: ``class_size`` (f, the size of its equivalence
    class in ``classes``) and ``prosecutor_risk`` (1/f), streamed through DuckDB into a Parquet, CSV or TSV file.
    With ``individual`` (the individual risk of ``classes``), also ``individual_risk``, the record's class risk; with
    ``households`` (measured on this source, e.g. ``diagnose(..., household=household).household_risk``) and the
    ``household`` column, also ``household_risk``, its household's risk
    (:func:`~privdash.measure.household.record_household_risk`). ``class_values`` adds one column per entry:
    the value of the record's class (an array over the classes, e.g. a model-based risk).

    ``classes`` must be the classes of this source (e.g. ``diagnose(source, ..., engine="duckdb").classes``, built
    from the engine's aggregate): each batch looks its records' QI values up among the classes' keys, so the
    per-record sizes are never held as one list. Under the ``wildcard`` policy f is the number of records
    compatible with the record's pattern; under ``drop`` a record with a missing QI is in no class and both
    columns are empty. Raises :class:`DataReadError` when a record's QI values are in no class (the source changed
    since ``classes`` were counted) and :class:`ParameterError` when the source already has one of the columns.
    """
    started = time.perf_counter()
    target, kind = _check_output(source, output, batch_rows)
    _check_risks(individual, households, household)
    qis = list(classes.quasi_identifiers)
    find_class = _class_finder(classes.class_codes, [len(c) for c in classes.categories])
    sizes = np.append(classes.sizes.astype(np.float64), np.nan)
    dropping = classes.missing_policy == MissingPolicy.DROP

    def with_sizes(batch: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
        codes = []
        missing = np.zeros(len(batch), dtype=bool)
        for name, categories in zip(qis, classes.categories, strict=True):
            # Each distinct value of the batch is looked up once among the categories, then spread to its rows.
            local, distinct = pd.factorize(batch[name], use_na_sentinel=True)
            distinct_code = categories.get_indexer(pd.Index(distinct))
            if (distinct_code < 0).any():
                unknown = distinct[int(np.flatnonzero(distinct_code < 0)[0])]
                raise DataReadError(
                    f"Column '{name}' holds {unknown!r}, which is in no class counted: the source changed since "
                    "its classes were counted. Diagnose it again."
                )
            absent = local < 0
            missing |= absent
            codes.append(np.where(absent, -1, distinct_code[np.maximum(local, 0)]) if len(distinct) else local)
        row_class = find_class(codes) if len(batch) else np.empty(0, np.intp)
        unmatched = row_class < 0
        if (unmatched & ~(missing & dropping)).any():
            raise DataReadError(
                "Some records' QI values are in no class counted: the source changed since its classes were "
                "counted. Diagnose it again."
            )
        size = sizes[np.where(unmatched, len(sizes) - 1, row_class)]
        extra = _record_risks(batch, np.where(unmatched, -1, row_class), individual, households, household)
        extra.update(_class_columns(class_values, np.where(unmatched, -1, row_class), classes.n_classes))
        return _with_sizes(batch, size, extra), [(int(unmatched.sum()), 0)]

    with _streamed(source, batch_rows, memory_limit, temp_directory) as reader:
        taken = [name for name in [*_added(individual, households), *(class_values or {})] if name in reader.names]
        if taken:
            raise ParameterError(f"The source already has a column '{taken[0]}'; rename it to write record sizes.")
        check_columns(pd.DataFrame(columns=reader.names), qis, role="quasi-identifier")
        if household is not None:
            check_columns(pd.DataFrame(columns=reader.names), [household], role="household-id column")
        rows, _, batches, totals, _ = _write(reader, with_sizes, 1, target, kind, escape_formulas_in_csv, None)
    return StreamedRecords(target, rows, int(totals[0, 0]), batches, time.perf_counter() - started)


def write_person_sizes(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    people: EntityClasses,
    output: str | os.PathLike[str],
    *,
    batch_rows: int = 1_000_000,
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    escape_formulas_in_csv: bool = True,
) -> StreamedRecords:
    """Write every row of ``source`` with its *person's* class size and prosecutor risk (the columns of
    :func:`write_record_sizes`), for person-level classes (:mod:`privdash.measure.entities`) counted from this
    source (e.g. ``diagnose(source, ..., entity=..., engine="duckdb").people``), streamed through DuckDB.

    Each batch looks its person ids up among ``people.person_ids``; a person all of whose rows were dropped (the
    ``drop`` policy) is in no class and both columns are empty. Raises :class:`DataReadError` when a row's person
    id is missing or was not counted (the source changed since) and :class:`ParameterError` when the source already
    has one of the columns.
    """
    started = time.perf_counter()
    target, kind = _check_output(source, output, batch_rows)
    sizes = people.person_sizes().astype(np.float64)
    sizes[sizes == 0] = np.nan  # in no class

    def with_sizes(batch: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
        local, distinct = pd.factorize(batch[people.entity], use_na_sentinel=True)
        position = people.person_ids.get_indexer(pd.Index(distinct)) if len(distinct) else np.zeros(0, np.intp)
        if (local < 0).any() or (position < 0).any():
            raise DataReadError(
                f"Some rows' person ids ('{people.entity}') are missing or were not counted: the source changed "
                "since its classes were counted. Diagnose it again."
            )
        size = sizes[position[local]] if len(batch) else np.zeros(0, dtype=np.float64)
        return _with_sizes(batch, size), [(int(np.isnan(size).sum()), 0)]

    with _streamed(source, batch_rows, memory_limit, temp_directory) as reader:
        taken = [name for name in (CLASS_SIZE, RECORD_RISK) if name in reader.names]
        if taken:
            raise ParameterError(f"The source already has a column '{taken[0]}'; rename it to write record sizes.")
        check_columns(pd.DataFrame(columns=reader.names), [people.entity], role="person-id column")
        rows, _, batches, totals, _ = _write(reader, with_sizes, 1, target, kind, escape_formulas_in_csv, None)
    return StreamedRecords(target, rows, int(totals[0, 0]), batches, time.perf_counter() - started)


def _class_finder(class_codes: np.ndarray, n_categories: Sequence[int]) -> Callable[[list[np.ndarray]], np.ndarray]:
    """A function from the category codes of records (one array per QI, ``-1`` for missing) to their class's row in
    ``class_codes`` (``-1``: in no class). The codes of a record become one integer (mixed radix, the missing code
    included), looked up in a dense table when there are at most 2**24 possible keys, else by binary search among
    the classes' sorted keys; when the keys would not fit 62 bits, a MultiIndex does the lookup."""
    radices = [n + 1 for n in n_categories]
    possible = math.prod(radices)
    if possible >= 2**62:
        lookup = pd.MultiIndex.from_arrays([class_codes[:, i] for i in range(class_codes.shape[1])])
        return lambda codes: lookup.get_indexer(pd.MultiIndex.from_arrays(codes))
    weights = np.cumprod([1, *radices[:-1]]).astype(np.int64)

    def key_of(codes: Sequence[np.ndarray]) -> np.ndarray:
        key = np.zeros(len(codes[0]) if len(codes) else 0, dtype=np.int64)
        for code, weight in zip(codes, weights, strict=True):
            key += (code.astype(np.int64) + 1) * weight
        return key

    keys = key_of([class_codes[:, i] for i in range(class_codes.shape[1])])
    if possible <= _DENSE_KEYS:
        table = np.full(possible, -1, dtype=np.intp)
        table[keys] = np.arange(len(keys))
        return lambda codes: table[key_of(codes)]
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]

    def find(codes: list[np.ndarray]) -> np.ndarray:
        key = key_of(codes)
        if not len(sorted_keys):
            return np.full(len(key), -1, dtype=np.intp)
        position = np.minimum(np.searchsorted(sorted_keys, key), len(sorted_keys) - 1)
        return np.where(sorted_keys[position] == key, order[position], -1)

    return find


#: Possible class keys up to which :func:`_class_finder` looks classes up in a dense table (128 MiB at most).
_DENSE_KEYS = 2**24


def with_record_sizes(
    data: pd.DataFrame,
    classes: EquivalenceClasses,
    *,
    individual: IndividualRisk | None = None,
    households: HouseholdRisk | None = None,
    household: str | None = None,
    class_values: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """``data`` with the columns of :func:`write_record_sizes`, for classes built from these rows in memory."""
    _check_risks(individual, households, household)
    taken = [name for name in [*_added(individual, households), *(class_values or {})] if name in data.columns]
    if taken:
        raise ParameterError(f"The table already has a column '{taken[0]}'; rename it to add record sizes.")
    if household is not None:
        check_columns(data, [household], role="household-id column")
    size = classes.record_sizes().astype(np.float64)
    size[size == 0] = np.nan  # in no class (the drop policy)
    assert classes.record_class is not None  # record_sizes raised otherwise
    extra = _record_risks(data, classes.record_class, individual, households, household)
    extra.update(_class_columns(class_values, classes.record_class, classes.n_classes))
    return _with_sizes(data, size, extra)


def _check_risks(individual: IndividualRisk | None, households: HouseholdRisk | None, household: str | None) -> None:
    if (households is None) != (household is None):
        raise ParameterError("Give the household risk and the household column together.")
    if households is not None and individual is None:
        raise ParameterError("The household risk of a record without a household is its individual risk: give it.")


def _added(individual: IndividualRisk | None, households: HouseholdRisk | None) -> list[str]:
    """The columns the record sizes add."""
    return [
        CLASS_SIZE,
        RECORD_RISK,
        *([INDIVIDUAL_RISK] if individual is not None else []),
        *([HOUSEHOLD_RISK] if households is not None else []),
    ]


def _record_risks(
    data: pd.DataFrame,
    record_class: np.ndarray,
    individual: IndividualRisk | None,
    households: HouseholdRisk | None,
    household: str | None,
) -> dict[str, np.ndarray]:
    """The individual and household risk of each record (NaN for records in no class), when asked for."""
    out: dict[str, np.ndarray] = {}
    if individual is None:
        return out
    record_class = np.asarray(record_class, dtype=np.int64)
    class_risk = np.append(np.asarray(individual.class_risk, dtype=np.float64), np.nan)
    out[INDIVIDUAL_RISK] = class_risk[np.where(record_class >= 0, record_class, len(class_risk) - 1)]
    if households is not None and household is not None:
        out[HOUSEHOLD_RISK] = record_household_risk(households, individual, data[household], record_class)
    return out


def _class_columns(
    class_values: Mapping[str, np.ndarray] | None, record_class: np.ndarray, n_classes: int
) -> dict[str, np.ndarray]:
    """Per record, the value of its class in each array of ``class_values`` (NaN for records in no class)."""
    out: dict[str, np.ndarray] = {}
    record_class = np.asarray(record_class, dtype=np.int64)
    for name, values in (class_values or {}).items():
        per_class = np.asarray(values, dtype=np.float64)
        if per_class.shape != (n_classes,):
            raise ParameterError(f"'{name}' must hold one value per class ({n_classes:,}).")
        padded = np.append(per_class, np.nan)
        out[name] = padded[np.where(record_class >= 0, record_class, n_classes)]
    return out


def _with_sizes(data: pd.DataFrame, size: np.ndarray, extra: Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """``data`` and the added columns, from class sizes as floats (NaN: in no class)."""
    out = data.copy(deep=False)
    out[CLASS_SIZE] = pd.Series(size, index=data.index).astype("Int64")
    out[RECORD_RISK] = 1.0 / size
    for name, values in (extra or {}).items():
        out[name] = values
    return out


@contextlib.contextmanager
def _streamed(
    source: Any, batch_rows: int, memory_limit: str | None, temp_directory: str | os.PathLike[str] | None
) -> Iterator[_Reader]:
    """A reader of ``source``'s batches on a DuckDB connection of its own, closed afterwards; DuckDB's errors
    become :class:`DataReadError`."""
    import duckdb

    connection = duckdb_connection(memory_limit, temp_directory, ordered=True)
    try:
        opened = _relation(connection, source)
        typing = _column_typing(connection, opened)
        yield _Reader(connection, opened, typing, batch_rows)
    except duckdb.Error as exc:
        raise DataReadError(f"DuckDB could not stream the source: {_first_line(exc)}") from exc
    finally:
        connection.close()


def _check_output(source: Any, output: str | os.PathLike[str], batch_rows: int) -> tuple[Path, str]:
    """The output path and its kind, refusing a bad ``batch_rows``, an unknown suffix and the input itself."""
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ParameterError(f"batch_rows must be a whole number >= 1, got {batch_rows!r}.")
    target = Path(output)
    kind = _OUTPUTS.get(target.suffix.lower())
    if kind is None:
        raise ParameterError(f"Cannot write '{target.name}': use a .parquet, .csv or .tsv file name.")
    inputs = source_paths(source)
    if any(target.exists() and target.resolve() == path.resolve() for path in inputs):
        raise ParameterError(f"Refusing to overwrite the input file {target}; choose another output path.")
    return target, kind


# --- reading ---------------------------------------------------------------------------------------------------


class _Reader:
    """Batches of the source's rows, typed as the pandas reader types the whole file."""

    def __init__(
        self, connection: Any, source: DuckSource, typing: dict[int, tuple[pd.Index, pd.Series]], rows: int
    ) -> None:
        self._connection = connection
        self._source = source
        self.names = source.names
        self._text = source.text is not None
        self._typing = typing
        self._rows = rows

    def batches(self) -> Iterator[pd.DataFrame]:
        reader = self._connection.sql("SELECT * FROM src").to_arrow_reader(self._rows)
        for batch in _rebatched(reader, self._rows):
            if self._text:
                yield self._typed(batch.to_pandas(), range(len(self.names)))
                continue
            # Typed columns as the reader converts them, decimals as the whole column's decision (a batch alone
            # could decide otherwise: floats here, text there).
            decimals = [i for i, field in enumerate(batch.schema) if pa.types.is_decimal(field.type)]
            table = pa.Table.from_batches([batch])
            for i in decimals:
                table = table.set_column(i, batch.schema.field(i).name, _decimal_texts(table.column(i)))
            frame, _ = arrow_frame(table)
            frame.columns = pd.Index(self.names)
            frame = self._source.in_zones(frame)
            yield self._typed(frame, decimals) if decimals else frame

    def _typed(self, frame: pd.DataFrame, positions: Iterable[int]) -> pd.DataFrame:
        """``frame`` with the text of the columns at ``positions`` replaced by their typed values."""
        columns = {position: frame.iloc[:, position] for position in range(len(self.names))}
        for position in positions:
            texts, typed = self._typing[position]
            codes = texts.get_indexer(pd.Index(frame.iloc[:, position].to_numpy(dtype=object), dtype=object))
            # Missing text (NULL) has no entry: it takes the column's missing value, the typed series' last one
            # (a column without NULL has no missing value, and every text of a batch is one of its texts).
            codes = np.where(codes < 0, len(typed) - 1, codes)
            columns[position] = typed.take(codes).reset_index(drop=True)
        out = pd.DataFrame(columns, index=pd.RangeIndex(len(frame)))
        out.columns = pd.Index(self.names)
        return out


def _rebatched(batches: Iterable[Any], rows: int) -> Iterator[Any]:
    """Record batches of exactly ``rows`` rows (the last one of what is left): DuckDB's reader hands some batches over
    short where its scan's parts end (which depends on its read buffer and the file), so that the number of batches
    would depend on them too. At most one batch's rows are held besides the batch being filled."""
    held: list[Any] = []
    count = 0
    for batch in batches:
        if not held and batch.num_rows == rows:  # a whole batch, as most are: handed over as it is
            yield batch
            continue
        held.append(batch)
        count += batch.num_rows
        while count >= rows:
            table = pa.Table.from_batches(held).combine_chunks()
            yield from table.slice(0, rows).to_batches(max_chunksize=rows)
            rest = table.slice(rows)
            held, count = rest.to_batches(), rest.num_rows
    if count:
        yield from pa.Table.from_batches(held).combine_chunks().to_batches(max_chunksize=rows)


def _column_typing(connection: Any, source: DuckSource) -> dict[int, tuple[pd.Index, pd.Series]]:
    """Per column read as text (by position): its distinct texts and their values as the reader types the column
    (a missing value last, when the column has one). Every column of a CSV file; the decimal columns of a typed
    source, as their exact text (DuckDB writes a decimal as :func:`_decimal_texts` does), which the numeric rules
    type as the reader types them (:func:`~privdash.data.tables.arrow_frame`)."""
    csv: CsvText | None = source.text
    if csv is not None:
        positions = list(range(len(source.names)))
    else:
        kinds = connection.sql("SELECT * FROM src LIMIT 0").types
        positions = [i for i, kind in enumerate(kinds) if str(kind).upper().startswith("DECIMAL")]
    typing = {}
    for position in positions:
        name = source.names[position]
        distinct = connection.execute(f"SELECT DISTINCT c{position}::VARCHAR AS v FROM src").df()["v"]
        texts = distinct.dropna().astype(object)
        # The missing value last, only when the column has one: a column of integers without one is int64 (with
        # one it would be float64, and 30 would be written 30.0).
        has_null = len(texts) < len(distinct)
        frame = pd.DataFrame({name: pd.Series([*texts.tolist(), *([None] if has_null else [])], dtype=object)})
        typed = type_like_the_reader(frame, [name], csv)[name]
        typing[position] = (pd.Index(texts.tolist(), dtype=object), typed)
    return typing


# --- resolving steps ---------------------------------------------------------------------------------------------


def _resolve(
    step: Step,
    stages: list[_Stage],
    reader: _Reader,
    source: Any,
    secrets: Mapping[str, Any] | None,
    memory_limit: str | None,
    temp_directory: str | os.PathLike[str] | None,
) -> tuple[_Stage, int]:
    """The step with its rule hierarchies made explicit over the whole column, and the combinations it removes."""
    if step.kind != "generalize":
        return _Stage(step), 0
    params = dict(step.params)
    columns = params.get("columns")
    if not isinstance(columns, Mapping) or not columns:
        raise ParameterError("Step 'generalize': 'columns' must be an object mapping column names to settings.")
    suppress = params.get("suppress")
    if suppress is not None and params.get("entity") is not None:
        raise ParameterError(
            "Step 'generalize' suppresses whole people (it has a person id), which needs every row of a person at "
            "once: apply this recipe to the table in memory (engine pandas)."
        )
    targets = PrivacyTargets.from_dict(suppress) if suppress is not None else None
    qis = [str(c) for c in params.get("quasi_identifiers", list(columns) if targets is not None else [])]
    sensitive = list(targets.sensitive) if targets is not None else []
    needed = list(dict.fromkeys([*map(str, columns), *qis, *sensitive]))
    if stages:
        aggregate = _aggregate_through(reader, stages, needed, secrets)
    else:  # nothing before this step: DuckDB counts the source itself
        aggregate = aggregate_table(
            source, needed, engine="duckdb", memory_limit=memory_limit, temp_directory=temp_directory
        ).frame
    explicit = {}
    for name, spec in columns.items():
        if not isinstance(spec, Mapping) or "hierarchy" not in spec:
            raise ParameterError(f"Step 'generalize', column '{name}': give a 'level' and a 'hierarchy'.")
        hierarchy = Hierarchy.from_dict(spec["hierarchy"], aggregate[str(name)])
        explicit[name] = {**spec, "hierarchy": {"rows": hierarchy.matrix().tolist()}}
    cellwise = Step("generalize", {"columns": explicit})
    if targets is None:
        return _Stage(cellwise), int(bool(stages))
    generalized = apply_step(aggregate.drop(columns=[COUNT]), cellwise).data.reset_index(drop=True)
    generalized[COUNT] = aggregate[COUNT].to_numpy()
    removed = violating_combinations(generalized, qis, COUNT, targets)
    return _Stage(cellwise, removed), int(bool(stages))


def _aggregate_through(
    reader: _Reader, stages: list[_Stage], columns: list[str], secrets: Mapping[str, Any] | None
) -> pd.DataFrame:
    """The aggregate of ``columns`` after ``stages``, counted batch by batch (one pass over the source)."""
    parts: list[pd.DataFrame] = []
    for batch in reader.batches():
        transformed, _ = _run_stages(batch, stages, secrets)
        parts.append(transformed.groupby(columns, dropna=False, sort=False).size().rename(COUNT).reset_index())
        if len(parts) > 16:  # keep the running aggregate small
            parts = [_combine(parts, columns)]
    if not parts:
        return pd.DataFrame({**{name: pd.Series(dtype=object) for name in columns}, COUNT: pd.Series(dtype=np.int64)})
    return _combine(parts, columns)


def _combine(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    together = pd.concat(parts, ignore_index=True)
    return together.groupby(columns, dropna=False, sort=False)[COUNT].sum().reset_index()


def _run_stages(
    batch: pd.DataFrame, stages: Sequence[_Stage], secrets: Mapping[str, Any] | None
) -> tuple[pd.DataFrame, list[tuple[int, int]]]:
    """The batch after every stage, and per stage (cells changed, records removed)."""
    effects = []
    data = batch
    for stage in stages:
        result = apply_step(data, stage.step, secrets=secrets)
        data = result.data
        removed = 0
        if stage.removed is not None and len(stage.removed):
            keep = without_combinations(data, stage.removed)
            removed = int((~keep).sum())
            data = data.loc[keep]
        effects.append((_cells_changed(result.summary), removed))
    return data, effects


def _cells_changed(summary: Mapping[str, Any]) -> int:
    total = 0
    for key in ("cells_changed", "cells_top_coded", "cells_bottom_coded", "cells_masked"):
        value = summary.get(key)
        if isinstance(value, int):
            total += value
    return total


# --- writing -------------------------------------------------------------------------------------------------------


def _write(
    reader: _Reader,
    transform: Callable[[pd.DataFrame], tuple[pd.DataFrame, list[tuple[int, int]]]],
    effects_per_batch: int,
    target: Path,
    kind: str,
    escape: bool,
    accept: Callable[[int, int], bool] | None,
) -> tuple[int, int, int, np.ndarray, bool]:
    """Stream ``reader``'s batches through ``transform`` into ``target`` (written beside it, then renamed).

    Returns rows read, rows written, batches, the ``transform``'s effects summed over the batches (one row of two
    numbers per effect) and whether ``accept`` kept the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    os.close(handle)
    rows_in = rows_out = batches = 0
    totals = np.zeros((effects_per_batch, 2), dtype=np.int64)
    writer: Any = None
    schema: Any = None
    text_out = None if kind == "parquet" else open(temporary, "w", encoding="utf-8", newline="")  # noqa: SIM115
    try:
        for batch in reader.batches():
            batches += 1
            rows_in += len(batch)
            data, effects = transform(batch)
            totals += np.asarray(effects, dtype=np.int64).reshape(effects_per_batch, 2)
            rows_out += len(data)
            data = data.reset_index(drop=True)
            if text_out is None:
                try:
                    table = pa.Table.from_pandas(data, preserve_index=False, schema=schema)
                except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                    raise ParameterError(
                        f"Batch {batches} has other column types than the first batch ({_first_line(exc)}); "
                        "write CSV instead, or apply the recipe in memory."
                    ) from exc
                if writer is None:
                    schema = table.schema
                    writer = pq.ParquetWriter(temporary, schema)
                writer.write_table(table)
            else:
                frame = escape_formulas(data) if escape else data
                frame.to_csv(text_out, index=False, header=batches == 1, sep="\t" if kind == "tsv" else ",")
        if text_out is None and writer is None:  # an empty source still gets a file with its columns
            empty = pd.DataFrame({name: pd.Series(dtype=object) for name in reader.names})
            pq.write_table(pa.Table.from_pandas(empty, preserve_index=False), temporary)
        if writer is not None:
            writer.close()
            writer = None
        if text_out is not None:
            text_out.close()
        kept = accept is None or accept(rows_in, rows_out)
        if kept:
            os.replace(temporary, target)
        else:
            Path(temporary).unlink(missing_ok=True)
    except BaseException:
        if writer is not None:
            writer.close()
        if text_out is not None:
            text_out.close()
        Path(temporary).unlink(missing_ok=True)
        raise
    return rows_in, rows_out, batches, totals, kept
