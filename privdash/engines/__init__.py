"""Where the counting runs: the engines that turn a table, wherever it lives, into the per-class aggregate.

Every measure of privdash reads the per-class summary :class:`~privdash.measure.classes.EquivalenceClasses`.
An engine computes what that summary needs, ``SELECT qi..., sa..., COUNT(*) ... GROUP BY ALL``, where the data is:
pandas in memory, or DuckDB out of core over CSV and Parquet files on disk (never loading the raw rows into
pandas). Only the aggregate, one row per distinct combination of the analysed columns, comes back. The same
typing rules as :func:`~privdash.data.tables.read_table` are applied to that aggregate, so every engine gives
the same numbers to the last digit.
"""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.engines.aggregate import (
        Aggregate,
        DatabaseSource,
        Engine,
        SparkTable,
        aggregate_table,
        resolve_engine,
        sample_rows,
    )
    from privdash.engines.streaming import (
        StreamedRecipe,
        StreamedRecords,
        apply_recipe_streaming,
        with_record_sizes,
        write_person_sizes,
        write_record_sizes,
    )

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "Aggregate": "privdash.engines.aggregate",
    "aggregate_table": "privdash.engines.aggregate",
    "apply_recipe_streaming": "privdash.engines.streaming",
    "DatabaseSource": "privdash.engines.aggregate",
    "Engine": "privdash.engines.aggregate",
    "resolve_engine": "privdash.engines.aggregate",
    "sample_rows": "privdash.engines.aggregate",
    "SparkTable": "privdash.engines.aggregate",
    "StreamedRecipe": "privdash.engines.streaming",
    "StreamedRecords": "privdash.engines.streaming",
    "with_record_sizes": "privdash.engines.streaming",
    "write_person_sizes": "privdash.engines.streaming",
    "write_record_sizes": "privdash.engines.streaming",
}

__all__ = [
    "Aggregate",
    "DatabaseSource",
    "Engine",
    "SparkTable",
    "StreamedRecipe",
    "StreamedRecords",
    "aggregate_table",
    "apply_recipe_streaming",
    "resolve_engine",
    "sample_rows",
    "with_record_sizes",
    "write_person_sizes",
    "write_record_sizes",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
