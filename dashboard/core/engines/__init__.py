"""Where the counting runs: the engines that turn a table, wherever it lives, into the per-class aggregate.

Every measure of privdash reads the per-class summary :class:`~dashboard.core.measure.classes.EquivalenceClasses`.
An engine computes what that summary needs, ``SELECT qi..., sa..., COUNT(*) ... GROUP BY ALL``, where the data is:
pandas in memory, or DuckDB out of core over CSV and Parquet files on disk (never loading the raw rows into
pandas). Only the aggregate, one row per distinct combination of the analysed columns, comes back. The same
typing rules as :func:`~dashboard.core.data.tables.read_table` are applied to that aggregate, so every engine gives
the same numbers to the last digit.
"""
