"""Measuring disclosure risk: integer encoding, equivalence classes, privacy models (k, l, t, delta, beta),
re-identification risk, population estimates, QI combinations and the one-call :func:`diagnose`."""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.measure.classes import EquivalenceClasses, MissingPolicy, class_size_frequencies, equivalence_classes
    from privdash.measure.combinations import (
        CombinationRisk,
        MinimalSampleUniques,
        combination_risk,
        minimal_sample_uniques,
    )
    from privdash.measure.diagnose import Diagnosis
    from privdash.measure.entities import EntityClasses, EntityKey, entity_classes
    from privdash.measure.model_risk import (
        MODEL_RISK_METHODS,
        ModelRisk,
        parse_model_risk_methods,
        population_unique_probability,
    )
    from privdash.measure.models import SensitiveModels, sensitive_models
    from privdash.measure.perturbed import PerturbationRisk, perturbation_risk
    from privdash.measure.population import PopulationCounts, PopulationSource
    from privdash.measure.risk import (
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
    from privdash.measure.verdict import TargetCheck, Verdict, check_targets
    from privdash.targets import DEFAULT_MAX_SUPPRESSION, PrivacyTargets, parse_targets

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "AttackerRisk": "privdash.measure.risk",
    "check_targets": "privdash.measure.verdict",
    "class_size_frequencies": "privdash.measure.classes",
    "combination_risk": "privdash.measure.combinations",
    "CombinationRisk": "privdash.measure.combinations",
    "DEFAULT_MAX_RISK": "privdash.measure.risk",
    "DEFAULT_MAX_SUPPRESSION": "privdash.targets",
    "Diagnosis": "privdash.measure.diagnose",
    "entity_classes": "privdash.measure.entities",
    "EntityClasses": "privdash.measure.entities",
    "EntityKey": "privdash.measure.entities",
    "equivalence_classes": "privdash.measure.classes",
    "EquivalenceClasses": "privdash.measure.classes",
    "individual_risk": "privdash.measure.risk",
    "journalist_risk": "privdash.measure.risk",
    "marketer_risk": "privdash.measure.risk",
    "minimal_sample_uniques": "privdash.measure.combinations",
    "MinimalSampleUniques": "privdash.measure.combinations",
    "MissingPolicy": "privdash.measure.classes",
    "MODEL_RISK_METHODS": "privdash.measure.model_risk",
    "ModelRisk": "privdash.measure.model_risk",
    "parse_model_risk_methods": "privdash.measure.model_risk",
    "parse_targets": "privdash.targets",
    "perturbation_risk": "privdash.measure.perturbed",
    "PerturbationRisk": "privdash.measure.perturbed",
    "population_unique_probability": "privdash.measure.model_risk",
    "PopulationCounts": "privdash.measure.population",
    "PopulationSource": "privdash.measure.population",
    "PrivacyTargets": "privdash.targets",
    "prosecutor_risk": "privdash.measure.risk",
    "records_at_risk_by_k": "privdash.measure.risk",
    "records_at_risk_curve": "privdash.measure.risk",
    "risk_summary": "privdash.measure.risk",
    "RiskCurve": "privdash.measure.risk",
    "RiskSummary": "privdash.measure.risk",
    "sensitive_models": "privdash.measure.models",
    "SensitiveModels": "privdash.measure.models",
    "TargetCheck": "privdash.measure.verdict",
    "Verdict": "privdash.measure.verdict",
}

__all__ = [
    "DEFAULT_MAX_RISK",
    "DEFAULT_MAX_SUPPRESSION",
    "MODEL_RISK_METHODS",
    "AttackerRisk",
    "CombinationRisk",
    "Diagnosis",
    "EntityClasses",
    "EntityKey",
    "EquivalenceClasses",
    "MinimalSampleUniques",
    "MissingPolicy",
    "ModelRisk",
    "PerturbationRisk",
    "PopulationCounts",
    "PopulationSource",
    "PrivacyTargets",
    "RiskCurve",
    "RiskSummary",
    "SensitiveModels",
    "TargetCheck",
    "Verdict",
    "check_targets",
    "class_size_frequencies",
    "combination_risk",
    "entity_classes",
    "equivalence_classes",
    "individual_risk",
    "journalist_risk",
    "marketer_risk",
    "minimal_sample_uniques",
    "parse_model_risk_methods",
    "parse_targets",
    "perturbation_risk",
    "population_unique_probability",
    "prosecutor_risk",
    "records_at_risk_by_k",
    "records_at_risk_curve",
    "risk_summary",
    "sensitive_models",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
