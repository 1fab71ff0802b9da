"""The privdash core: pure computation over pandas and numpy, with no knowledge of the dashboard.

The names below are the public Python API; the dashboard and the ``privdash`` command call the same functions.

>>> from dashboard.core import diagnose, read_table
>>> table = read_table("adult.csv")                              # CSV (any delimiter), Excel or Parquet
>>> result = diagnose(table, ["sex", "age", "race"], sensitive=["salary-class"])
>>> result.classes.k, result.risk.prosecutor.highest             # smallest class, highest prosecutor risk

Every result is an immutable dataclass; ``Diagnosis.to_dict()`` gives the JSON printed by ``privdash diagnose --json``.
"""

from dashboard.core.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType, suggest_contract
from dashboard.core.data.tables import read_table, write_table
from dashboard.core.errors import ColumnError, ContractError, DataReadError, ParameterError, PrivdashError
from dashboard.core.geo.postcodes import (
    PopulationTable,
    Strategy,
    generalize_postcodes,
    read_population,
    recode_postcodes,
)
from dashboard.core.measure.classes import (
    MISSING_LABEL,
    EquivalenceClasses,
    MissingPolicy,
    class_size_frequencies,
    equivalence_classes,
    equivalence_classes_from_aggregate,
)
from dashboard.core.measure.combinations import (
    CombinationRisk,
    MinimalSampleUniques,
    combination_risk,
    minimal_sample_uniques,
)
from dashboard.core.measure.diagnose import Diagnosis, diagnose
from dashboard.core.measure.models import SensitiveModels, sensitive_models
from dashboard.core.measure.risk import (
    RiskSummary,
    individual_risk,
    journalist_risk,
    marketer_risk,
    prosecutor_risk,
    risk_summary,
)
from dashboard.core.search.lattice import SearchResult, optimal_generalization
from dashboard.core.targets import PrivacyTargets
from dashboard.core.transform.generalization import generalize
from dashboard.core.transform.hierarchy import (
    Hierarchy,
    hierarchy_from_rule,
    load_hierarchies,
    read_arx_hierarchy,
    write_arx_hierarchy,
)
from dashboard.core.transform.identifiers import drop_identifiers, mask_identifiers, pseudonymize
from dashboard.core.transform.jobs import run_job_file
from dashboard.core.transform.microaggregation import microaggregate, microaggregate_with_contract
from dashboard.core.transform.steps import Recipe, Step, TransformResult, apply_recipe
from dashboard.core.transform.suppression import suppress_cells, suppress_records, top_bottom_code
from dashboard.core.utility.metrics import Metric, information_loss, utility_report

__all__ = [
    "MISSING_LABEL",
    "ColumnError",
    "ColumnRole",
    "CombinationRisk",
    "ContractError",
    "DataContract",
    "DataReadError",
    "Diagnosis",
    "EquivalenceClasses",
    "FieldMetadata",
    "Hierarchy",
    "Metric",
    "MinimalSampleUniques",
    "MissingPolicy",
    "ParameterError",
    "PopulationTable",
    "PrivacyTargets",
    "PrivdashError",
    "Recipe",
    "RiskSummary",
    "SearchResult",
    "SensitiveModels",
    "StatisticalType",
    "Step",
    "Strategy",
    "TransformResult",
    "apply_recipe",
    "class_size_frequencies",
    "combination_risk",
    "diagnose",
    "drop_identifiers",
    "equivalence_classes",
    "equivalence_classes_from_aggregate",
    "generalize",
    "generalize_postcodes",
    "hierarchy_from_rule",
    "individual_risk",
    "information_loss",
    "journalist_risk",
    "load_hierarchies",
    "marketer_risk",
    "mask_identifiers",
    "microaggregate",
    "microaggregate_with_contract",
    "minimal_sample_uniques",
    "optimal_generalization",
    "prosecutor_risk",
    "pseudonymize",
    "read_arx_hierarchy",
    "read_population",
    "read_table",
    "recode_postcodes",
    "risk_summary",
    "run_job_file",
    "sensitive_models",
    "suggest_contract",
    "suppress_cells",
    "suppress_records",
    "top_bottom_code",
    "utility_report",
    "write_arx_hierarchy",
    "write_table",
]
