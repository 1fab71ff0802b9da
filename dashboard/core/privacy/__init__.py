"""Differential privacy for releases of aggregates (counts, histograms, sums, means) through OpenDP, with a
privacy-budget ledger per dataset. See :mod:`.mechanisms` (definitions and noise), :mod:`.release` (queries,
contribution bounds, the domain rule, error bars) and :mod:`.ledger` (sequential composition)."""

from dashboard.core.privacy.ledger import (
    BudgetExceededError,
    BudgetLedger,
    DatasetAccount,
    LedgerEntry,
    file_sha256,
    frame_sha256,
)
from dashboard.core.privacy.mechanisms import (
    DEFAULT_CONFIDENCE,
    Calibrated,
    Mechanism,
    PrivacyBudget,
    accuracy,
    calibrate,
)
from dashboard.core.privacy.release import (
    MAX_DOMAIN_CELLS,
    DPRelease,
    dp_class_sizes,
    dp_count,
    dp_histogram,
    dp_mean,
    dp_sum,
    read_domain_file,
    sum_measurement,
)

__all__ = [
    "DEFAULT_CONFIDENCE",
    "MAX_DOMAIN_CELLS",
    "BudgetExceededError",
    "BudgetLedger",
    "Calibrated",
    "DPRelease",
    "DatasetAccount",
    "LedgerEntry",
    "Mechanism",
    "PrivacyBudget",
    "accuracy",
    "calibrate",
    "dp_class_sizes",
    "dp_count",
    "dp_histogram",
    "dp_mean",
    "dp_sum",
    "file_sha256",
    "frame_sha256",
    "read_domain_file",
    "sum_measurement",
]
