"""Reading tables and describing them: file readers and writers, the data contract (column roles and types) and
the built-in demo datasets."""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.data.contract import (
        ColumnRole,
        ColumnsByRole,
        DataContract,
        FieldMetadata,
        StatisticalType,
        infer_statistical_type,
        suggest_contract,
        suggest_roles,
    )
    from privdash.data.demo import DEFAULT_DEMO, demo_datasets, people_contract, people_table, uniform_table
    from privdash.data.tables.limits import DEFAULT_READ_LIMITS, ReadLimits
    from privdash.data.tables.read import read_table, read_table_with_info
    from privdash.data.tables.write import csv_text, escape_formulas, write_table

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "ColumnRole": "privdash.data.contract",
    "ColumnsByRole": "privdash.data.contract",
    "DataContract": "privdash.data.contract",
    "DEFAULT_DEMO": "privdash.data.demo",
    "DEFAULT_READ_LIMITS": "privdash.data.tables.limits",
    "demo_datasets": "privdash.data.demo",
    "csv_text": "privdash.data.tables.write",
    "escape_formulas": "privdash.data.tables.write",
    "FieldMetadata": "privdash.data.contract",
    "infer_statistical_type": "privdash.data.contract",
    "people_contract": "privdash.data.demo",
    "people_table": "privdash.data.demo",
    "read_table": "privdash.data.tables.read",
    "read_table_with_info": "privdash.data.tables.read",
    "ReadLimits": "privdash.data.tables.limits",
    "StatisticalType": "privdash.data.contract",
    "suggest_contract": "privdash.data.contract",
    "suggest_roles": "privdash.data.contract",
    "uniform_table": "privdash.data.demo",
    "write_table": "privdash.data.tables.write",
}

__all__ = [
    "DEFAULT_DEMO",
    "DEFAULT_READ_LIMITS",
    "ColumnRole",
    "ColumnsByRole",
    "DataContract",
    "FieldMetadata",
    "ReadLimits",
    "StatisticalType",
    "csv_text",
    "demo_datasets",
    "escape_formulas",
    "infer_statistical_type",
    "people_contract",
    "people_table",
    "read_table",
    "read_table_with_info",
    "suggest_contract",
    "suggest_roles",
    "uniform_table",
    "write_table",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
