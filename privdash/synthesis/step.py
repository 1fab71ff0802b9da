"""The recipe step ``synthesize``: a partially, fully or hybrid synthetic table (:func:`~.release.synthesize`) with
its settings and the seed used recorded, so the recipe re-runs it to the same table.

Parameters: the settings' values (:meth:`~.release.SynthesisSettings.to_dict`: ``method``, ``columns``, ``rows``,
``k``, ``share``, ``min_leaf``, ``seed``) and ``quasi_identifiers`` (the records at risk of a partial synthesis).
A ``dp`` step is refused here: a differentially private release must be charged to the dataset's budget ledger,
which ``privdash synthesize --recipe`` does (:data:`DP_STEP_REFUSAL`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from privdash.errors import ParameterError
from privdash.synthesis.release import SynthesisSettings, synthesize
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = ["DP_STEP_REFUSAL", "STEP_KIND", "synthesis_step", "synthesis_step_settings"]

#: The kind of the recipe step.
STEP_KIND = "synthesize"
#: Why a dp step is not applied by a recipe outside ``privdash synthesize``.
DP_STEP_REFUSAL = (
    "A dp synthesize step is a differentially private release that must be charged to the dataset's budget "
    "ledger: run it with privdash synthesize DATA --recipe RECIPE.json --ledger LEDGER --dataset-identity NAME, "
    "not with anonymize --recipe or apply_recipe."
)


def synthesis_step_settings(params: dict[str, Any]) -> tuple[SynthesisSettings, tuple[str, ...]]:
    """The settings and the quasi-identifiers of a ``synthesize`` step's parameters."""
    values = dict(params)
    qis = values.pop("quasi_identifiers", ()) or ()
    if isinstance(qis, str) or not all(isinstance(q, str) for q in qis):
        raise ParameterError("Step 'synthesize': quasi_identifiers must be a list of column names.")
    return SynthesisSettings.from_dict(values), tuple(qis)


def synthesis_step(settings: SynthesisSettings, quasi_identifiers: tuple[str, ...] = ()) -> Step:
    """The recipe step that re-makes a release with ``settings`` (give the seed used to get the same table)."""
    return Step(STEP_KIND, {**settings.to_dict(), "quasi_identifiers": list(quasi_identifiers)})


@register_step(STEP_KIND)
def _synthesize_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    settings, qis = synthesis_step_settings(params)
    if settings.method == "dp":
        raise ParameterError(DP_STEP_REFUSAL)
    release = synthesize(data, settings, quasi_identifiers=qis)
    summary = {
        "method": settings.method,
        "rows_replaced": release.rows_replaced,
        "cells_replaced": release.cells_replaced,
        "model": release.model,
        "seed": release.settings.seed,
    }
    return TransformResult(release.table, synthesis_step(release.settings, qis), summary)
