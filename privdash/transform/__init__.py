"""Transforming a table into a safer one: versioned steps and recipes, hierarchies, generalization, top/bottom
coding, record and local suppression, microaggregation, identifier masking and pseudonyms, and batch job files.

The microaggregation function is ``privdash.microaggregation`` (also
``privdash.transform.microaggregation.microaggregation``): here the name ``microaggregation`` is its module."""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.transform.generalization import generalize
    from privdash.transform.hierarchy import (
        TOP,
        Hierarchy,
        HierarchyError,
        build_hierarchy,
        default_rule,
        hierarchy_from_rule,
        load_hierarchies,
        read_arx_hierarchy,
        search_hierarchy,
        write_arx_hierarchy,
    )
    from privdash.transform.identifiers import drop_identifiers, key_fingerprint, mask_identifiers, pseudonymize
    from privdash.transform.perturbation import NOISE_METHODS, add_noise, pram, rank_swap, shuffling
    from privdash.transform.release_targets import release_verdict
    from privdash.transform.steps import Recipe, Step, TransformResult, apply_recipe, apply_step
    from privdash.transform.suppression import (
        SUPPRESSION_RISK_TARGETS,
        local_suppression,
        record_suppression,
        top_bottom_coding,
    )

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "add_noise": "privdash.transform.perturbation",
    "apply_recipe": "privdash.transform.steps",
    "apply_step": "privdash.transform.steps",
    "build_hierarchy": "privdash.transform.hierarchy",
    "default_rule": "privdash.transform.hierarchy",
    "drop_identifiers": "privdash.transform.identifiers",
    "generalize": "privdash.transform.generalization",
    "Hierarchy": "privdash.transform.hierarchy",
    "hierarchy_from_rule": "privdash.transform.hierarchy",
    "HierarchyError": "privdash.transform.hierarchy",
    "key_fingerprint": "privdash.transform.identifiers",
    "load_hierarchies": "privdash.transform.hierarchy",
    "mask_identifiers": "privdash.transform.identifiers",
    "NOISE_METHODS": "privdash.transform.perturbation",
    "pram": "privdash.transform.perturbation",
    "pseudonymize": "privdash.transform.identifiers",
    "rank_swap": "privdash.transform.perturbation",
    "read_arx_hierarchy": "privdash.transform.hierarchy",
    "Recipe": "privdash.transform.steps",
    "release_verdict": "privdash.transform.release_targets",
    "search_hierarchy": "privdash.transform.hierarchy",
    "shuffling": "privdash.transform.perturbation",
    "Step": "privdash.transform.steps",
    "local_suppression": "privdash.transform.suppression",
    "SUPPRESSION_RISK_TARGETS": "privdash.transform.suppression",
    "record_suppression": "privdash.transform.suppression",
    "TOP": "privdash.transform.hierarchy",
    "top_bottom_coding": "privdash.transform.suppression",
    "TransformResult": "privdash.transform.steps",
    "write_arx_hierarchy": "privdash.transform.hierarchy",
}
#: Old names, kept for one release: they resolve (a call warns) but are not listed in ``__all__``.
_SOURCES.update(
    {
        "microaggregate": "privdash.transform.microaggregation",
        "shuffle_within_classes": "privdash.transform.perturbation",
        "suppress_cells": "privdash.transform.suppression",
        "suppress_records": "privdash.transform.suppression",
        "top_bottom_code": "privdash.transform.suppression",
    }
)

__all__ = [
    "NOISE_METHODS",
    "SUPPRESSION_RISK_TARGETS",
    "TOP",
    "Hierarchy",
    "HierarchyError",
    "Recipe",
    "Step",
    "TransformResult",
    "add_noise",
    "apply_recipe",
    "apply_step",
    "build_hierarchy",
    "default_rule",
    "drop_identifiers",
    "generalize",
    "hierarchy_from_rule",
    "key_fingerprint",
    "load_hierarchies",
    "local_suppression",
    "mask_identifiers",
    "pram",
    "pseudonymize",
    "rank_swap",
    "read_arx_hierarchy",
    "record_suppression",
    "release_verdict",
    "search_hierarchy",
    "shuffling",
    "top_bottom_coding",
    "write_arx_hierarchy",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
