"""Deprecated: the library is ``privdash`` (``import privdash``); ``dashboard`` is only the web app.

``from dashboard.core import X`` and ``import dashboard.core.measure.risk`` keep working for one release, with a
:class:`DeprecationWarning`, and give the very objects of ``privdash`` (``dashboard.core.privacy`` is ``privdash.dp``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

_OLD = "dashboard.core"
_RENAMED = {"privacy": "dp"}
#: Modules that became modules of a package when their package was split (old dotted path under the package).
_SPLIT = {
    "application.report_render": "application.report.render",
    "application.report_template": "application.report.template",
    "data._readstat_worker": "data.tables._readstat_worker",
}

warnings.warn(
    "dashboard.core is deprecated and will be removed in the next release: import privdash instead",
    DeprecationWarning,
    stacklevel=2,
)


def _new_name(old: str) -> str:
    parts = old[len(_OLD) + 1 :].split(".")
    parts[0] = _RENAMED.get(parts[0], parts[0])
    for before, after in _SPLIT.items():
        if parts[:2] == before.split("."):
            parts[:2] = after.split(".")
    return ".".join(["privdash", *parts])


class _AliasLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(_new_name(spec.name))

    def exec_module(self, module: ModuleType) -> None:
        """The module was executed under its new name."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``dashboard.core.<sub>`` as the module ``privdash.<sub>`` itself (one module object, two names)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_OLD + "."):
            return None
        if importlib.util.find_spec(_new_name(fullname)) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader())


if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())


def __getattr__(name: str) -> Any:
    """Every name ``dashboard.core`` exported, from the module it lives in now."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


# The names ``dashboard.core`` exported and their modules under ``privdash``.
_MOVED: dict[str, str] = {
    "AttackReport": "privdash.attack",
    "AttackResult": "privdash.attack",
    "UnmatchedValuesError": "privdash.attack",
    "attack_release": "privdash.attack",
    "Choice": "privdash.choices",
    "ColumnRole": "privdash.data.contract",
    "ColumnsByRole": "privdash.data.contract",
    "DataContract": "privdash.data.contract",
    "FieldMetadata": "privdash.data.contract",
    "StatisticalType": "privdash.data.contract",
    "infer_statistical_type": "privdash.data.contract",
    "suggest_contract": "privdash.data.contract",
    "suggest_roles": "privdash.data.contract",
    "DEFAULT_DEMO": "privdash.data.demo",
    "demo_datasets": "privdash.data.demo",
    "people_contract": "privdash.data.demo",
    "people_table": "privdash.data.demo",
    "uniform_table": "privdash.data.demo",
    "DEFAULT_READ_LIMITS": "privdash.data.tables.limits",
    "ReadLimits": "privdash.data.tables.limits",
    "csv_text": "privdash.data.tables.write",
    "escape_formulas": "privdash.data.tables.write",
    "read_table": "privdash.data.tables.read",
    "read_table_with_info": "privdash.data.tables.read",
    "write_table": "privdash.data.tables.write",
    "AUTO_DUCKDB_BYTES": "privdash.engines.aggregate",
    "COUNT": "privdash.engines.aggregate",
    "Aggregate": "privdash.engines.aggregate",
    "DatabaseSource": "privdash.engines.aggregate",
    "Engine": "privdash.engines.aggregate",
    "SparkTable": "privdash.engines.aggregate",
    "aggregate_table": "privdash.engines.aggregate",
    "resolve_engine": "privdash.engines.aggregate",
    "sample_rows": "privdash.engines.aggregate",
    "is_database_url": "privdash.engines.common",
    "redact_url": "privdash.engines.database",
    "CLASS_SIZE": "privdash.engines.streaming",
    "RECORD_RISK": "privdash.engines.streaming",
    "STREAMABLE_STEPS": "privdash.engines.streaming",
    "StreamedRecipe": "privdash.engines.streaming",
    "StreamedRecords": "privdash.engines.streaming",
    "apply_recipe_streaming": "privdash.engines.streaming",
    "with_record_sizes": "privdash.engines.streaming",
    "write_person_sizes": "privdash.engines.streaming",
    "write_record_sizes": "privdash.engines.streaming",
    "ColumnError": "privdash.errors",
    "ContractError": "privdash.errors",
    "DataReadError": "privdash.errors",
    "ParameterError": "privdash.errors",
    "PrivdashError": "privdash.errors",
    "ReadLimitError": "privdash.errors",
    "TooManyQuasiIdentifiersError": "privdash.errors",
    "check_columns": "privdash.errors",
    "check_finite": "privdash.errors",
    "default_cache_dir": "privdash.geo.geography",
    "district_neighbours": "privdash.geo.geography",
    "district_polygons_dir": "privdash.geo.geography",
    "SpatialK": "privdash.geo.geomask",
    "donut_mask": "privdash.geo.geomask",
    "masking_points": "privdash.geo.geomask",
    "perturb_coordinates": "privdash.geo.geomask",
    "spatial_k_anonymity": "privdash.geo.geomask",
    "DEFAULT_POPULATION_THRESHOLD": "privdash.geo.postcodes.strategies",
    "Neighbours": "privdash.geo.postcodes.strategies",
    "PopulationTable": "privdash.geo.postcodes.population",
    "PostcodeGeneralization": "privdash.geo.postcodes.strategies",
    "Strategy": "privdash.geo.postcodes.strategies",
    "default_data_dir": "privdash.geo.postcodes.population",
    "fails_threshold": "privdash.geo.postcodes.strategies",
    "generalize_postcodes": "privdash.geo.postcodes.strategies",
    "neighbours_from_doogal": "privdash.geo.postcodes.strategies",
    "parse_postcodes": "privdash.geo.postcodes.parse",
    "population_counts": "privdash.geo.postcodes.population",
    "read_population": "privdash.geo.postcodes.population",
    "recode_postcodes": "privdash.geo.postcodes.recode",
    "MISSING_LABEL": "privdash.measure.classes",
    "EquivalenceClasses": "privdash.measure.classes",
    "MissingPolicy": "privdash.measure.classes",
    "class_size_frequencies": "privdash.measure.classes",
    "equivalence_classes": "privdash.measure.classes",
    "equivalence_classes_from_aggregate": "privdash.measure.classes",
    "CombinationRisk": "privdash.measure.combinations",
    "MinimalSampleUniques": "privdash.measure.combinations",
    "combination_risk": "privdash.measure.combinations",
    "minimal_sample_uniques": "privdash.measure.combinations",
    "Diagnosis": "privdash.measure.diagnose",
    "diagnose": "privdash.measure.diagnose",
    "EntityClasses": "privdash.measure.entities",
    "EntityKey": "privdash.measure.entities",
    "entity_classes": "privdash.measure.entities",
    "entity_classes_from_aggregate": "privdash.measure.entities",
    "MODEL_RISK_METHODS": "privdash.measure.model_risk",
    "ModelRisk": "privdash.measure.model_risk",
    "model_risk": "privdash.measure.model_risk",
    "parse_model_risk_methods": "privdash.measure.model_risk",
    "population_unique_probability": "privdash.measure.model_risk",
    "SensitiveModels": "privdash.measure.models",
    "sensitive_models": "privdash.measure.models",
    "PerturbationRisk": "privdash.measure.perturbed",
    "perturbation_risk": "privdash.measure.perturbed",
    "PopulationCounts": "privdash.measure.population",
    "PopulationSource": "privdash.measure.population",
    "DEFAULT_MAX_RISK": "privdash.measure.risk",
    "AttackerRisk": "privdash.measure.risk",
    "RiskCurve": "privdash.measure.risk",
    "RiskSummary": "privdash.measure.risk",
    "individual_risk": "privdash.measure.risk",
    "journalist_risk": "privdash.measure.risk",
    "marketer_risk": "privdash.measure.risk",
    "prosecutor_risk": "privdash.measure.risk",
    "records_at_risk_by_k": "privdash.measure.risk",
    "records_at_risk_curve": "privdash.measure.risk",
    "risk_summary": "privdash.measure.risk",
    "TargetCheck": "privdash.measure.verdict",
    "Verdict": "privdash.measure.verdict",
    "check_targets": "privdash.measure.verdict",
    "BudgetExceededError": "privdash.dp",
    "BudgetLedger": "privdash.dp",
    "ContributionBound": "privdash.dp",
    "DatasetAccount": "privdash.dp",
    "DPRelease": "privdash.dp",
    "IdentityResolution": "privdash.dp",
    "Mechanism": "privdash.dp",
    "PrivacyBudget": "privdash.dp",
    "TableFingerprint": "privdash.dp",
    "bound_contributions": "privdash.dp",
    "check_identity": "privdash.dp",
    "check_max_rows": "privdash.dp",
    "dp_class_sizes": "privdash.dp",
    "dp_count": "privdash.dp",
    "dp_histogram": "privdash.dp",
    "dp_mean": "privdash.dp",
    "dp_sum": "privdash.dp",
    "file_sha256": "privdash.dp",
    "frame_sha256": "privdash.dp",
    "is_read_only": "privdash.dp",
    "most_rows_per_person": "privdash.dp",
    "read_domain_file": "privdash.dp",
    "DP_ERROR": "privdash.dp.release",
    "DP_TRUE_VALUE": "privdash.dp.release",
    "DP_VALUE": "privdash.dp.release",
    "DEFAULT_MAX_PEOPLE_NODES": "privdash.search.entities",
    "PeopleSearchResult": "privdash.search.entities",
    "people_generalization": "privdash.search.entities",
    "DEFAULT_MAX_CHECKS": "privdash.search.heuristic",
    "heuristic_search": "privdash.search.heuristic",
    "DEFAULT_MAX_NODES": "privdash.search.lattice",
    "SEARCH_STRATEGIES": "privdash.search.lattice",
    "SearchResult": "privdash.search.lattice",
    "Solution": "privdash.search.lattice",
    "optimal_generalization": "privdash.search.lattice",
    "suppression_budget": "privdash.search.lattice",
    "RECODING_CHOICES": "privdash.search.local",
    "LocalRecodingResult": "privdash.search.local",
    "anonymize": "privdash.search.local",
    "local_recoding": "privdash.search.local",
    "SolutionEstimates": "privdash.search.solutions",
    "solution_estimates": "privdash.search.solutions",
    "solution_table": "privdash.search.solutions",
    "step_with_levels": "privdash.search.solutions",
    "DEFAULT_MAX_SUPPRESSION": "privdash.targets",
    "PrivacyTargets": "privdash.targets",
    "parse_targets": "privdash.targets",
    "generalize": "privdash.transform.generalization",
    "RULE_SETTINGS": "privdash.transform.hierarchy",
    "TOP": "privdash.transform.hierarchy",
    "Hierarchy": "privdash.transform.hierarchy",
    "HierarchyError": "privdash.transform.hierarchy",
    "build_hierarchy": "privdash.transform.hierarchy",
    "canonical_text": "privdash.transform.hierarchy",
    "default_rule": "privdash.transform.hierarchy",
    "hierarchy_from_rule": "privdash.transform.hierarchy",
    "load_hierarchies": "privdash.transform.hierarchy",
    "read_arx_hierarchy": "privdash.transform.hierarchy",
    "search_hierarchy": "privdash.transform.hierarchy",
    "write_arx_hierarchy": "privdash.transform.hierarchy",
    "KEY_ENV": "privdash.transform.identifiers",
    "MIN_KEY_BYTES": "privdash.transform.identifiers",
    "drop_identifiers": "privdash.transform.identifiers",
    "key_fingerprint": "privdash.transform.identifiers",
    "mask_identifiers": "privdash.transform.identifiers",
    "pseudonymize": "privdash.transform.identifiers",
    "run_job_file": "privdash.transform.jobs",
    "microaggregate": "privdash.transform.microaggregation",
    "microaggregate_with_contract": "privdash.transform.microaggregation",
    "types_from_contract": "privdash.transform.microaggregation",
    "NOISE_METHODS": "privdash.transform.perturbation",
    "NUMERICAL_PERTURBATIONS": "privdash.transform.perturbation",
    "PERTURBATIVE_STEPS": "privdash.transform.perturbation",
    "add_noise": "privdash.transform.perturbation",
    "perturbed_numeric_columns": "privdash.transform.perturbation",
    "pram": "privdash.transform.perturbation",
    "rank_swap": "privdash.transform.perturbation",
    "shuffle_within_classes": "privdash.transform.perturbation",
    "release_verdict": "privdash.transform.release_targets",
    "Recipe": "privdash.transform.steps",
    "Step": "privdash.transform.steps",
    "TransformResult": "privdash.transform.steps",
    "apply_recipe": "privdash.transform.steps",
    "apply_step": "privdash.transform.steps",
    "SUPPRESSION_RISK_TARGETS": "privdash.transform.suppression",
    "suppress_cells": "privdash.transform.suppression",
    "suppress_records": "privdash.transform.suppression",
    "top_bottom_code": "privdash.transform.suppression",
    "ESTIMATE_KINDS": "privdash.utility.estimates",
    "ConfidenceInterval": "privdash.utility.estimates",
    "Estimate": "privdash.utility.estimates",
    "EstimateComparison": "privdash.utility.estimates",
    "EstimateRow": "privdash.utility.estimates",
    "compare_estimates": "privdash.utility.estimates",
    "estimates_table": "privdash.utility.estimates",
    "interval_overlap": "privdash.utility.estimates",
    "parse_estimate": "privdash.utility.estimates",
    "InformationLoss": "privdash.utility.metrics",
    "Metric": "privdash.utility.metrics",
    "cells_changed": "privdash.utility.metrics",
    "classifier_accuracy": "privdash.utility.metrics",
    "information_loss": "privdash.utility.metrics",
    "utility_report": "privdash.utility.metrics",
    "value_distributions": "privdash.utility.metrics",
}
