"""The common shape of every fix: a pure function that returns new data and a record of what it did.

A *step* is a transformation (generalize a column, top-code, suppress records, microaggregate ...) applied to a
DataFrame. Each step kind is registered here under a name with a function ``apply(data, **params) ->
TransformResult``; ``params`` are plain JSON values, so a list of steps is a *recipe* that can be saved as JSON and
re-applied to new data with the same schema (:func:`apply_recipe`). Inputs are never modified in place.

A step kind may declare *secrets* (``register_step("pseudonymize", secrets=("key",))``): parameters that are never
recorded in a step or a recipe. The caller hands them to :func:`apply_step` / :func:`apply_recipe` as
``secrets={"key": ...}``; a step that carries a secret among its parameters is refused, so a recipe with a key in
it cannot be applied (or be mistaken for a safe one).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from dashboard.core.errors import ParameterError, PrivdashError, check_fraction

__all__ = [
    "RECIPE_VERSION",
    "Recipe",
    "Step",
    "TransformResult",
    "apply_recipe",
    "apply_step",
    "register_step",
    "registered_steps",
]

RECIPE_VERSION = 1


@dataclass(frozen=True)
class Step:
    """One transformation: its registered ``kind`` and JSON-serialisable parameters."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Step:
        if not isinstance(obj, Mapping) or not isinstance(obj.get("kind"), str):
            raise ParameterError("Each recipe step must be an object with a 'kind' and 'params'.")
        params = obj.get("params", {})
        if not isinstance(params, Mapping):
            raise ParameterError(f"Recipe step '{obj['kind']}': 'params' must be an object.")
        return cls(obj["kind"], dict(params))


@dataclass(frozen=True, eq=False)
class TransformResult:
    """The output of a step.

    Attributes
    ----------
    data
        The transformed table (a new DataFrame; same row order as the input, minus suppressed rows if any).
    step
        The step as applied, with every parameter resolved (e.g. the cut points a quantile builder chose), so
        re-applying it to other data reproduces exactly the same transformation.
    summary
        JSON-serialisable facts for the user: rows suppressed, cells changed, values recoded ...
    mapping
        Original value -> published value, one row per (column, original value), columns ``column``,
        ``original``, ``published``; None when the step has no value mapping (e.g. microaggregation).
    kept_rows
        Positions (in the input) of the rows kept, when the step removes rows; None when every row is kept.
    """

    data: pd.DataFrame
    step: Step
    summary: Mapping[str, Any] = field(default_factory=dict)
    mapping: pd.DataFrame | None = None
    kept_rows: Any = None


class StepFunction(Protocol):
    def __call__(self, data: pd.DataFrame, /, **params: Any) -> TransformResult: ...


_REGISTRY: dict[str, StepFunction] = {}
_SECRETS: dict[str, tuple[str, ...]] = {}


def register_step(kind: str, *, secrets: Sequence[str] = ()) -> Callable[[StepFunction], StepFunction]:
    """Register ``function`` as the implementation of step ``kind`` (used as a decorator); ``secrets`` name the
    keyword arguments that are given when the step is applied and never recorded (see the module docstring)."""

    def decorate(function: StepFunction) -> StepFunction:
        if kind in _REGISTRY and _REGISTRY[kind] is not function:
            raise RuntimeError(f"step kind {kind!r} registered twice")
        _REGISTRY[kind] = function
        _SECRETS[kind] = tuple(secrets)
        return function

    return decorate


def registered_steps() -> tuple[str, ...]:
    """The names of all step kinds, sorted."""
    _load_builtin_steps()
    return tuple(sorted(_REGISTRY))


def apply_step(data: pd.DataFrame, step: Step, *, secrets: Mapping[str, Any] | None = None) -> TransformResult:
    """Apply one step; unknown kinds and bad parameters raise :class:`ParameterError`.

    ``secrets`` holds the values of the secret parameters the step kind declares (e.g. the pseudonymization
    ``key``); a secret the caller does not give is passed as None, so the step itself says what is missing.
    """
    _load_builtin_steps()
    function = _REGISTRY.get(step.kind)
    if function is None:
        raise ParameterError(f"Unknown step kind {step.kind!r}; known kinds: {', '.join(sorted(_REGISTRY))}.")
    declared = _SECRETS.get(step.kind, ())
    stored = [name for name in declared if name in step.params]
    if stored:
        raise ParameterError(
            f"A recipe must not contain the secret {', '.join(repr(s) for s in stored)} of step '{step.kind}': "
            "remove it from the step and give it when the recipe is applied."
        )
    given = secrets or {}
    try:
        return function(data, **dict(step.params), **{name: given.get(name) for name in declared})
    except TypeError as exc:
        raise ParameterError(f"Step '{step.kind}': {exc}.") from exc


@dataclass(frozen=True)
class Recipe:
    """An ordered list of steps that turns a raw table into the published one.

    ``max_suppression`` records the share of the records the fix was allowed to remove when it was made (the
    suppression limit of its search or record suppression), or None. Re-applied to other data, the same steps may
    remove more (classes that were large enough may be small there): :meth:`suppression_excess` says so.
    """

    steps: tuple[Step, ...]
    max_suppression: float | None = None

    def __post_init__(self) -> None:
        if self.max_suppression is not None:
            object.__setattr__(self, "max_suppression", check_fraction(self.max_suppression, "max_suppression"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"privdash_recipe": RECIPE_VERSION, "steps": [s.to_dict() for s in self.steps]}
        if self.max_suppression is not None:
            out["max_suppression"] = self.max_suppression
        return out

    def suppression_excess(self, rows_in: int, rows_out: int) -> str | None:
        """Why removing ``rows_in - rows_out`` of ``rows_in`` records exceeds the recorded limit, or None when it
        does not (or no limit was recorded). The limit is a share of the input: ``floor(max_suppression * rows_in)``
        records, as the search counts it."""
        if self.max_suppression is None or rows_in <= 0:
            return None
        removed = rows_in - rows_out
        allowed = math.floor(self.max_suppression * rows_in + 1e-9)
        if removed <= allowed:
            return None
        return (
            f"The recipe removed {removed:,} of {rows_in:,} records ({removed / rows_in:.1%}), more than the "
            f"{self.max_suppression:.1%} suppression limit it was made with ({allowed:,} records): classes that "
            "were large enough in the data it was made on are smaller in this data."
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Recipe:
        if not isinstance(obj, Mapping) or not isinstance(obj.get("steps"), list):
            raise ParameterError("A recipe is a JSON object with a 'steps' list.")
        version = obj.get("privdash_recipe", RECIPE_VERSION)
        if version != RECIPE_VERSION:
            raise ParameterError(f"Recipe version {version!r} is not supported (expected {RECIPE_VERSION}).")
        limit = obj.get("max_suppression")
        return cls(tuple(Step.from_dict(s) for s in obj["steps"]), None if limit is None else limit)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Recipe:
        try:
            obj = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise PrivdashError(f"Cannot read the recipe {path}: {exc.strerror or exc}.") from exc
        except json.JSONDecodeError as exc:
            raise PrivdashError(f"The recipe {path} is not valid JSON: {exc.msg} (line {exc.lineno}).") from exc
        return cls.from_dict(obj)


def apply_recipe(
    data: pd.DataFrame, recipe: Recipe | Sequence[Step], *, secrets: Mapping[str, Any] | None = None
) -> tuple[pd.DataFrame, list[TransformResult]]:
    """Apply every step in order (``secrets`` as in :func:`apply_step`); return the final table and each step's
    result."""
    steps = recipe.steps if isinstance(recipe, Recipe) else tuple(recipe)
    results = []
    current = data
    for step in steps:
        result = apply_step(current, step, secrets=secrets)
        results.append(result)
        current = result.data
    return current, results


def _load_builtin_steps() -> None:
    """Import the modules that register the built-in step kinds (imported lazily to keep start-up light)."""
    import importlib

    for module in _BUILTIN_STEP_MODULES:
        importlib.import_module(module)


# Modules whose import registers step kinds; each is added here when it lands.
_BUILTIN_STEP_MODULES: tuple[str, ...] = (
    "dashboard.core.transform.generalization",
    "dashboard.core.geo.postcodes",
    "dashboard.core.transform.suppression",
    "dashboard.core.transform.microaggregation",
    "dashboard.core.transform.identifiers",
    "dashboard.core.transform.perturbation",
    "dashboard.core.geo.geomask",
)
