"""Differential privacy for releases of aggregates (counts, histograms, sums, means) through OpenDP, with a
privacy-budget ledger per dataset. See :mod:`.mechanisms` (definitions and noise), :mod:`.release` (queries,
contribution bounds, the domain rule, error bars), :mod:`.contributions` (people with several rows: the bound on rows
per person and the truncation to it) and :mod:`.ledger` (sequential composition)."""

from typing import TYPE_CHECKING

from dashboard.core._lazy import lazy_names

if TYPE_CHECKING:
    from dashboard.core.privacy.contributions import (
        ContributionBound,
        bound_contributions,
        check_max_rows,
        most_rows_per_person,
    )
    from dashboard.core.privacy.ledger import (
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
    from dashboard.core.privacy.mechanisms import (
        DEFAULT_CONFIDENCE,
        Calibrated,
        Mechanism,
        PrivacyBudget,
        accuracy,
        calibrate,
        out_of_range,
    )
    from dashboard.core.privacy.release import (
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
    "ContributionBound": "dashboard.core.privacy.contributions",
    "bound_contributions": "dashboard.core.privacy.contributions",
    "check_max_rows": "dashboard.core.privacy.contributions",
    "most_rows_per_person": "dashboard.core.privacy.contributions",
    "NEAR_COPY": "dashboard.core.privacy.ledger",
    "BudgetExceededError": "dashboard.core.privacy.ledger",
    "BudgetLedger": "dashboard.core.privacy.ledger",
    "DatasetAccount": "dashboard.core.privacy.ledger",
    "IdentityResolution": "dashboard.core.privacy.ledger",
    "LedgerEntry": "dashboard.core.privacy.ledger",
    "TableFingerprint": "dashboard.core.privacy.ledger",
    "check_identity": "dashboard.core.privacy.ledger",
    "file_sha256": "dashboard.core.privacy.ledger",
    "frame_sha256": "dashboard.core.privacy.ledger",
    "is_read_only": "dashboard.core.privacy.ledger",
    "DEFAULT_CONFIDENCE": "dashboard.core.privacy.mechanisms",
    "Calibrated": "dashboard.core.privacy.mechanisms",
    "Mechanism": "dashboard.core.privacy.mechanisms",
    "PrivacyBudget": "dashboard.core.privacy.mechanisms",
    "accuracy": "dashboard.core.privacy.mechanisms",
    "calibrate": "dashboard.core.privacy.mechanisms",
    "out_of_range": "dashboard.core.privacy.mechanisms",
    "MAX_DOMAIN_CELLS": "dashboard.core.privacy.release",
    "DPRelease": "dashboard.core.privacy.release",
    "dp_class_sizes": "dashboard.core.privacy.release",
    "dp_count": "dashboard.core.privacy.release",
    "dp_histogram": "dashboard.core.privacy.release",
    "dp_mean": "dashboard.core.privacy.release",
    "dp_sum": "dashboard.core.privacy.release",
    "key_selection_delta": "dashboard.core.privacy.release",
    "key_selection_threshold": "dashboard.core.privacy.release",
    "read_domain_file": "dashboard.core.privacy.release",
    "sum_measurement": "dashboard.core.privacy.release",
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
