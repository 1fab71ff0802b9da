"""Differential privacy for releases of aggregates (counts, histograms, sums, means) through OpenDP, with a
privacy-budget ledger per dataset. See :mod:`.mechanisms` (definitions and noise), :mod:`.release` (queries,
contribution bounds, the domain rule, error bars), :mod:`.contributions` (people with several rows: the bound on rows
per person and the truncation to it) and :mod:`.ledger` (sequential composition)."""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.dp.contributions import (
        ContributionBound,
        bound_contributions,
        check_max_rows,
        most_rows_per_person,
    )
    from privdash.dp.ledger import (
        NEAR_COPY,
        BudgetExceededError,
        BudgetLedger,
        DatasetAccount,
        IdentityResolution,
        LedgerEntry,
        TableFingerprint,
        check_identity,
        file_sha256,
        frame_sha256,
        is_read_only,
    )
    from privdash.dp.mechanisms import (
        DEFAULT_CONFIDENCE,
        Calibrated,
        Mechanism,
        PrivacyBudget,
        accuracy,
        calibrate,
        out_of_range,
    )
    from privdash.dp.release import (
        MAX_DOMAIN_CELLS,
        DPRelease,
        dp_class_sizes,
        dp_count,
        dp_histogram,
        dp_mean,
        dp_sum,
        key_selection_delta,
        key_selection_threshold,
        read_domain_file,
        sum_measurement,
    )

# Where each public name lives; the module is imported on first use (PEP 562), so that importing the package
# costs nothing until a name is asked for.
_SOURCES: dict[str, str] = {
    "ContributionBound": "privdash.dp.contributions",
    "bound_contributions": "privdash.dp.contributions",
    "check_max_rows": "privdash.dp.contributions",
    "most_rows_per_person": "privdash.dp.contributions",
    "NEAR_COPY": "privdash.dp.ledger",
    "BudgetExceededError": "privdash.dp.ledger",
    "BudgetLedger": "privdash.dp.ledger",
    "DatasetAccount": "privdash.dp.ledger",
    "IdentityResolution": "privdash.dp.ledger",
    "LedgerEntry": "privdash.dp.ledger",
    "TableFingerprint": "privdash.dp.ledger",
    "check_identity": "privdash.dp.ledger",
    "file_sha256": "privdash.dp.ledger",
    "frame_sha256": "privdash.dp.ledger",
    "is_read_only": "privdash.dp.ledger",
    "DEFAULT_CONFIDENCE": "privdash.dp.mechanisms",
    "Calibrated": "privdash.dp.mechanisms",
    "Mechanism": "privdash.dp.mechanisms",
    "PrivacyBudget": "privdash.dp.mechanisms",
    "accuracy": "privdash.dp.mechanisms",
    "calibrate": "privdash.dp.mechanisms",
    "out_of_range": "privdash.dp.mechanisms",
    "MAX_DOMAIN_CELLS": "privdash.dp.release",
    "DPRelease": "privdash.dp.release",
    "dp_class_sizes": "privdash.dp.release",
    "dp_count": "privdash.dp.release",
    "dp_histogram": "privdash.dp.release",
    "dp_mean": "privdash.dp.release",
    "dp_sum": "privdash.dp.release",
    "key_selection_delta": "privdash.dp.release",
    "key_selection_threshold": "privdash.dp.release",
    "read_domain_file": "privdash.dp.release",
    "sum_measurement": "privdash.dp.release",
}


__all__ = [
    "DEFAULT_CONFIDENCE",
    "MAX_DOMAIN_CELLS",
    "NEAR_COPY",
    "BudgetExceededError",
    "BudgetLedger",
    "Calibrated",
    "ContributionBound",
    "DPRelease",
    "DatasetAccount",
    "IdentityResolution",
    "LedgerEntry",
    "Mechanism",
    "PrivacyBudget",
    "TableFingerprint",
    "accuracy",
    "bound_contributions",
    "calibrate",
    "check_identity",
    "check_max_rows",
    "dp_class_sizes",
    "dp_count",
    "dp_histogram",
    "dp_mean",
    "dp_sum",
    "file_sha256",
    "frame_sha256",
    "is_read_only",
    "key_selection_delta",
    "key_selection_threshold",
    "most_rows_per_person",
    "out_of_range",
    "read_domain_file",
    "sum_measurement",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
