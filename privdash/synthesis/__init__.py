"""Synthetic data: partially, fully and hybrid synthetic tables by sequential CART (synthpop's method), DP
synthetic tables by MST, and the held-out control set their attacks are measured against. Definitions:
docs/synthesis.md."""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.synthesis.release import (
        ROW_CHOICES,
        SYNTHESIS_METHODS,
        SynthesisSettings,
        SyntheticRelease,
        minimum_rows,
        split_control,
        synthesize,
    )

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "ROW_CHOICES": "privdash.synthesis.release",
    "SYNTHESIS_METHODS": "privdash.synthesis.release",
    "SynthesisSettings": "privdash.synthesis.release",
    "SyntheticRelease": "privdash.synthesis.release",
    "minimum_rows": "privdash.synthesis.release",
    "split_control": "privdash.synthesis.release",
    "synthesize": "privdash.synthesis.release",
}

__all__ = [
    "ROW_CHOICES",
    "SYNTHESIS_METHODS",
    "SynthesisSettings",
    "SyntheticRelease",
    "minimum_rows",
    "split_control",
    "synthesize",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
