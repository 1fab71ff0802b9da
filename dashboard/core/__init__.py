"""The privdash core: pure computation over pandas and numpy, with no knowledge of the dashboard.

The names below are the public Python API; the dashboard and the ``privdash`` command call the same functions.
Diagnose, fix, check, export and keep the recipe, in five lines (Adult with ARX's hierarchies)::

    from dashboard.core import PrivacyTargets, diagnose, load_hierarchies, optimal_generalization, read_table
    from dashboard.core import write_table
    adult, qis, targets = read_table("adult.csv"), ["sex", "age", "race", "education"], PrivacyTargets(k=5)

    print(diagnose(adult, qis).check(targets).sentence())                  # diagnose: "Not safe to release: ..."
    fix = optimal_generalization(adult, load_hierarchies("hierarchies/", qis), k=5, max_suppression=0.02)
    print(diagnose(fix.data, qis).check(targets).sentence())               # check: "Meets every target ..."
    write_table(fix.data, "adult-k5.csv")                                  # export (formula cells escaped)
    fix.recipe.save("adult-k5.recipe.json")                                # the recipe re-applies the fix

Every result is an immutable dataclass; ``Diagnosis.to_dict()`` gives the JSON printed by ``privdash diagnose --json``.
The subpackages show where things live: :mod:`.data` (reading, contracts, demo tables), :mod:`.measure` (classes,
models, risk, population, combinations, diagnosis, verdict), :mod:`.transform` (steps and recipes, hierarchies,
generalization, suppression, microaggregation, identifiers), :mod:`.geo` (postcodes and polygons), :mod:`.search`
(least-lossy search) and :mod:`.utility` (information loss); :mod:`.targets` defines the release targets and
docs/definitions.md the vocabulary.
"""

from dashboard.core.attack import AttackReport, AttackResult, attack_release
from dashboard.core.choices import Choice
from dashboard.core.data.contract import (
    ColumnRole,
    ColumnsByRole,
    DataContract,
    FieldMetadata,
    StatisticalType,
    infer_statistical_type,
    suggest_contract,
    suggest_roles,
)
from dashboard.core.data.demo import DEFAULT_DEMO, demo_datasets, people_contract, people_table, uniform_table
from dashboard.core.data.tables import (
    DEFAULT_READ_LIMITS,
    ReadLimits,
    csv_text,
    escape_formulas,
    read_table,
    read_table_with_info,
    write_table,
)
from dashboard.core.engines.aggregate import (
    AUTO_DUCKDB_BYTES,
    COUNT,
    Aggregate,
    DatabaseSource,
    Engine,
    SparkTable,
    aggregate_table,
    resolve_engine,
    sample_rows,
)
from dashboard.core.engines.common import is_database_url
from dashboard.core.engines.database import redact_url
from dashboard.core.engines.streaming import (
    CLASS_SIZE,
    RECORD_RISK,
    STREAMABLE_STEPS,
    StreamedRecipe,
    StreamedRecords,
    apply_recipe_streaming,
    with_record_sizes,
    write_record_sizes,
)
from dashboard.core.errors import (
    ColumnError,
    ContractError,
    DataReadError,
    ParameterError,
    PrivdashError,
    ReadLimitError,
    TooManyQuasiIdentifiersError,
    check_columns,
)
from dashboard.core.geo.geography import default_cache_dir, district_neighbours, district_polygons_dir
from dashboard.core.geo.geomask import SpatialK, donut_mask, masking_points, perturb_coordinates, spatial_k_anonymity
from dashboard.core.geo.postcodes import (
    DEFAULT_POPULATION_THRESHOLD,
    Neighbours,
    PopulationTable,
    PostcodeGeneralization,
    Strategy,
    default_data_dir,
    fails_threshold,
    generalize_postcodes,
    neighbours_from_doogal,
    parse_postcodes,
    population_counts,
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
from dashboard.core.measure.perturbed import PerturbationRisk, perturbation_risk
from dashboard.core.measure.population import PopulationCounts, PopulationSource
from dashboard.core.measure.risk import (
    DEFAULT_MAX_RISK,
    AttackerRisk,
    RiskCurve,
    RiskSummary,
    individual_risk,
    journalist_risk,
    marketer_risk,
    prosecutor_risk,
    records_at_risk_by_k,
    records_at_risk_curve,
    risk_summary,
)
from dashboard.core.measure.verdict import TargetCheck, Verdict, check_targets
from dashboard.core.privacy import (
    BudgetExceededError,
    BudgetLedger,
    DPRelease,
    Mechanism,
    PrivacyBudget,
    dp_class_sizes,
    dp_count,
    dp_histogram,
    dp_mean,
    dp_sum,
    file_sha256,
    frame_sha256,
    read_domain_file,
)
from dashboard.core.search.lattice import SearchResult, optimal_generalization, suppression_budget
from dashboard.core.targets import PrivacyTargets, parse_targets
from dashboard.core.transform.generalization import generalize
from dashboard.core.transform.hierarchy import (
    RULE_SETTINGS,
    TOP,
    Hierarchy,
    HierarchyError,
    build_hierarchy,
    canonical_text,
    default_rule,
    hierarchy_from_rule,
    load_hierarchies,
    read_arx_hierarchy,
    search_hierarchy,
    write_arx_hierarchy,
)
from dashboard.core.transform.identifiers import (
    KEY_ENV,
    MIN_KEY_BYTES,
    drop_identifiers,
    key_fingerprint,
    mask_identifiers,
    pseudonymize,
)
from dashboard.core.transform.jobs import run_job_file
from dashboard.core.transform.microaggregation import (
    microaggregate,
    microaggregate_with_contract,
    types_from_contract,
)
from dashboard.core.transform.perturbation import (
    PERTURBATIVE_STEPS,
    add_noise,
    perturbed_numeric_columns,
    pram,
    rank_swap,
    shuffle_within_classes,
)
from dashboard.core.transform.steps import Recipe, Step, TransformResult, apply_recipe, apply_step
from dashboard.core.transform.suppression import suppress_cells, suppress_records, top_bottom_code
from dashboard.core.utility.metrics import (
    InformationLoss,
    Metric,
    cells_changed,
    classifier_accuracy,
    information_loss,
    utility_report,
    value_distributions,
)

__all__ = [
    "AUTO_DUCKDB_BYTES",
    "CLASS_SIZE",
    "COUNT",
    "DEFAULT_DEMO",
    "DEFAULT_MAX_RISK",
    "DEFAULT_POPULATION_THRESHOLD",
    "DEFAULT_READ_LIMITS",
    "KEY_ENV",
    "MIN_KEY_BYTES",
    "MISSING_LABEL",
    "PERTURBATIVE_STEPS",
    "RECORD_RISK",
    "RULE_SETTINGS",
    "STREAMABLE_STEPS",
    "TOP",
    "Aggregate",
    "AttackReport",
    "AttackResult",
    "AttackerRisk",
    "BudgetExceededError",
    "BudgetLedger",
    "Choice",
    "ColumnError",
    "ColumnRole",
    "ColumnsByRole",
    "CombinationRisk",
    "ContractError",
    "DPRelease",
    "DataContract",
    "DataReadError",
    "DatabaseSource",
    "Diagnosis",
    "Engine",
    "EquivalenceClasses",
    "FieldMetadata",
    "Hierarchy",
    "HierarchyError",
    "InformationLoss",
    "Mechanism",
    "Metric",
    "MinimalSampleUniques",
    "MissingPolicy",
    "Neighbours",
    "ParameterError",
    "PerturbationRisk",
    "PopulationCounts",
    "PopulationSource",
    "PopulationTable",
    "PostcodeGeneralization",
    "PrivacyBudget",
    "PrivacyTargets",
    "PrivdashError",
    "ReadLimitError",
    "ReadLimits",
    "Recipe",
    "RiskCurve",
    "RiskSummary",
    "SearchResult",
    "SensitiveModels",
    "SparkTable",
    "SpatialK",
    "StatisticalType",
    "Step",
    "Strategy",
    "StreamedRecipe",
    "StreamedRecords",
    "TargetCheck",
    "TooManyQuasiIdentifiersError",
    "TransformResult",
    "Verdict",
    "add_noise",
    "aggregate_table",
    "apply_recipe",
    "apply_recipe_streaming",
    "apply_step",
    "attack_release",
    "build_hierarchy",
    "canonical_text",
    "cells_changed",
    "check_columns",
    "check_targets",
    "class_size_frequencies",
    "classifier_accuracy",
    "combination_risk",
    "csv_text",
    "default_cache_dir",
    "default_data_dir",
    "default_rule",
    "demo_datasets",
    "diagnose",
    "district_neighbours",
    "district_polygons_dir",
    "donut_mask",
    "dp_class_sizes",
    "dp_count",
    "dp_histogram",
    "dp_mean",
    "dp_sum",
    "drop_identifiers",
    "equivalence_classes",
    "equivalence_classes_from_aggregate",
    "escape_formulas",
    "fails_threshold",
    "file_sha256",
    "frame_sha256",
    "generalize",
    "generalize_postcodes",
    "hierarchy_from_rule",
    "individual_risk",
    "infer_statistical_type",
    "information_loss",
    "is_database_url",
    "journalist_risk",
    "key_fingerprint",
    "load_hierarchies",
    "marketer_risk",
    "mask_identifiers",
    "masking_points",
    "microaggregate",
    "microaggregate_with_contract",
    "minimal_sample_uniques",
    "neighbours_from_doogal",
    "optimal_generalization",
    "parse_postcodes",
    "parse_targets",
    "people_contract",
    "people_table",
    "perturb_coordinates",
    "perturbation_risk",
    "perturbed_numeric_columns",
    "population_counts",
    "pram",
    "prosecutor_risk",
    "pseudonymize",
    "rank_swap",
    "read_arx_hierarchy",
    "read_domain_file",
    "read_population",
    "read_table",
    "read_table_with_info",
    "recode_postcodes",
    "records_at_risk_by_k",
    "records_at_risk_curve",
    "redact_url",
    "resolve_engine",
    "risk_summary",
    "run_job_file",
    "sample_rows",
    "search_hierarchy",
    "sensitive_models",
    "shuffle_within_classes",
    "spatial_k_anonymity",
    "suggest_contract",
    "suggest_roles",
    "suppress_cells",
    "suppress_records",
    "suppression_budget",
    "top_bottom_code",
    "types_from_contract",
    "uniform_table",
    "utility_report",
    "value_distributions",
    "with_record_sizes",
    "write_arx_hierarchy",
    "write_record_sizes",
    "write_table",
]
