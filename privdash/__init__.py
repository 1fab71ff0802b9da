"""privdash: privacy risk diagnostics for microdata, as a Python library.

Diagnose, fix, check, export and keep the recipe (Adult with ARX's hierarchies)::

    import privdash

    adult, qis = privdash.read_table("adult.csv"), ["sex", "age", "race", "education"]
    targets = privdash.PrivacyTargets(k=5)
    print(privdash.diagnose(adult, qis).check(targets).sentence())        # "Not safe to release: ..."
    hierarchies = privdash.load_hierarchies("hierarchies/", qis)
    fix = privdash.optimal_generalization(adult, hierarchies, k=5, max_suppression=0.02)
    print(privdash.diagnose(fix.data, qis).check(targets).sentence())     # "Meets every target ..."
    privdash.write_table(fix.data, "adult-k5.csv")                        # formula cells escaped
    fix.recipe.save("adult-k5.recipe.json")                               # re-applies the fix

The top level holds what a steward needs; the rest lives in named namespaces: :mod:`privdash.data` (reading,
contracts, demo tables), :mod:`privdash.measure` (classes, privacy models, risk, population, model-based risk,
households, people with several rows, the verdict), :mod:`privdash.transform` (steps and recipes, hierarchies and
every fix technique), :mod:`privdash.search` (least-lossy search and local recoding), :mod:`privdash.utility`
(information loss, estimates), :mod:`privdash.attack` (measured attacks), :mod:`privdash.dp` (differential privacy
through OpenDP, the budget ledger), :mod:`privdash.geo` (postcodes and geomasking), :mod:`privdash.engines` (DuckDB,
Spark and PostgreSQL counting) and :mod:`privdash.errors`. Every result is an immutable dataclass; importing the
package imports nothing heavy (names load on first use). The web app is the separate package ``dashboard``;
docs/definitions.md defines every name.
"""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.attack import AttackReport, attack_release
    from privdash.data.contract import DataContract, suggest_contract
    from privdash.data.tables.read import read_table
    from privdash.data.tables.write import write_table
    from privdash.errors import DataReadError, ParameterError, PrivdashError
    from privdash.measure.classes import EquivalenceClasses, equivalence_classes
    from privdash.measure.combinations import combination_risk
    from privdash.measure.diagnose import Diagnosis, diagnose
    from privdash.measure.model_risk import model_risk
    from privdash.measure.risk import RiskSummary, risk_summary
    from privdash.measure.verdict import Verdict
    from privdash.search.lattice import SearchResult, optimal_generalization
    from privdash.search.local import anonymize, local_recoding
    from privdash.targets import PrivacyTargets
    from privdash.transform.generalization import generalize
    from privdash.transform.hierarchy import Hierarchy, build_hierarchy, load_hierarchies
    from privdash.transform.identifiers import drop_identifiers, pseudonymize
    from privdash.transform.microaggregation import microaggregation
    from privdash.transform.perturbation import add_noise, pram
    from privdash.transform.steps import Recipe, Step, apply_recipe
    from privdash.transform.suppression import local_suppression, record_suppression, top_bottom_coding
    from privdash.utility.metrics import information_loss

__version__ = "0.1.0"

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "add_noise": "privdash.transform.perturbation",
    "anonymize": "privdash.search.local",
    "apply_recipe": "privdash.transform.steps",
    "attack_release": "privdash.attack",
    "AttackReport": "privdash.attack",
    "build_hierarchy": "privdash.transform.hierarchy",
    "combination_risk": "privdash.measure.combinations",
    "DataContract": "privdash.data.contract",
    "DataReadError": "privdash.errors",
    "diagnose": "privdash.measure.diagnose",
    "model_risk": "privdash.measure.model_risk",
    "Diagnosis": "privdash.measure.diagnose",
    "drop_identifiers": "privdash.transform.identifiers",
    "equivalence_classes": "privdash.measure.classes",
    "EquivalenceClasses": "privdash.measure.classes",
    "generalize": "privdash.transform.generalization",
    "Hierarchy": "privdash.transform.hierarchy",
    "information_loss": "privdash.utility.metrics",
    "load_hierarchies": "privdash.transform.hierarchy",
    "local_recoding": "privdash.search.local",
    "microaggregation": "privdash.transform.microaggregation",
    "optimal_generalization": "privdash.search.lattice",
    "ParameterError": "privdash.errors",
    "pram": "privdash.transform.perturbation",
    "PrivacyTargets": "privdash.targets",
    "PrivdashError": "privdash.errors",
    "pseudonymize": "privdash.transform.identifiers",
    "read_table": "privdash.data.tables.read",
    "Recipe": "privdash.transform.steps",
    "risk_summary": "privdash.measure.risk",
    "RiskSummary": "privdash.measure.risk",
    "SearchResult": "privdash.search.lattice",
    "Step": "privdash.transform.steps",
    "suggest_contract": "privdash.data.contract",
    "local_suppression": "privdash.transform.suppression",
    "record_suppression": "privdash.transform.suppression",
    "top_bottom_coding": "privdash.transform.suppression",
    "Verdict": "privdash.measure.verdict",
    "write_table": "privdash.data.tables.write",
}
#: Old names, kept for one release: they resolve (a call warns) but are not listed in ``__all__``.
_SOURCES.update(
    {
        "microaggregate": "privdash.transform.microaggregation",
        "suppress_cells": "privdash.transform.suppression",
        "suppress_records": "privdash.transform.suppression",
        "top_bottom_code": "privdash.transform.suppression",
    }
)

__all__ = [
    "AttackReport",
    "DataContract",
    "DataReadError",
    "Diagnosis",
    "EquivalenceClasses",
    "Hierarchy",
    "ParameterError",
    "PrivacyTargets",
    "PrivdashError",
    "Recipe",
    "RiskSummary",
    "SearchResult",
    "Step",
    "Verdict",
    "__version__",
    "add_noise",
    "anonymize",
    "apply_recipe",
    "attack_release",
    "build_hierarchy",
    "combination_risk",
    "diagnose",
    "drop_identifiers",
    "equivalence_classes",
    "generalize",
    "information_loss",
    "load_hierarchies",
    "local_recoding",
    "local_suppression",
    "microaggregation",
    "model_risk",
    "optimal_generalization",
    "pram",
    "pseudonymize",
    "read_table",
    "record_suppression",
    "risk_summary",
    "suggest_contract",
    "top_bottom_coding",
    "write_table",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
