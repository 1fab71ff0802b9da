"""Measuring what a transformation costs: information-loss metrics, value distributions and classifier accuracy."""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.utility.estimates import (
        ESTIMATE_KINDS,
        ConfidenceInterval,
        Estimate,
        EstimateComparison,
        EstimateRow,
        compare_estimates,
        estimates_table,
        interval_overlap,
        parse_estimate,
    )
    from privdash.utility.metrics import (
        InformationLoss,
        Metric,
        cells_changed,
        classifier_accuracy,
        information_loss,
        utility_report,
        value_distributions,
    )

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "cells_changed": "privdash.utility.metrics",
    "classifier_accuracy": "privdash.utility.metrics",
    "compare_estimates": "privdash.utility.estimates",
    "ConfidenceInterval": "privdash.utility.estimates",
    "Estimate": "privdash.utility.estimates",
    "ESTIMATE_KINDS": "privdash.utility.estimates",
    "EstimateComparison": "privdash.utility.estimates",
    "EstimateRow": "privdash.utility.estimates",
    "estimates_table": "privdash.utility.estimates",
    "information_loss": "privdash.utility.metrics",
    "InformationLoss": "privdash.utility.metrics",
    "interval_overlap": "privdash.utility.estimates",
    "Metric": "privdash.utility.metrics",
    "parse_estimate": "privdash.utility.estimates",
    "utility_report": "privdash.utility.metrics",
    "value_distributions": "privdash.utility.metrics",
}

__all__ = [
    "ESTIMATE_KINDS",
    "ConfidenceInterval",
    "Estimate",
    "EstimateComparison",
    "EstimateRow",
    "InformationLoss",
    "Metric",
    "cells_changed",
    "classifier_accuracy",
    "compare_estimates",
    "estimates_table",
    "information_loss",
    "interval_overlap",
    "parse_estimate",
    "utility_report",
    "value_distributions",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
