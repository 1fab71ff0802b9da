"""The common shape of every fix: a pure function that returns new data and a record of what it did.

A *step* is a transformation (generalize a column, top-code, suppress records, microaggregate ...) applied to a
DataFrame. Each step kind is registered here under a name with a function ``apply(data, **params) ->
TransformResult``; ``params`` are plain JSON values, so a list of steps is a *recipe* that can be saved as JSON and
re-applied to new data with the same schema (:func:`apply_recipe`). Inputs are never modified in place.

A step kind may declare *secrets* (``register_step("pseudonymize", secrets=("key",))``): parameters that are never
recorded in a step or a recipe. The caller hands them to :func:`apply_step` / :func:`apply_recipe` as
``secrets={"key": ...}``; a step that carries a secret among its parameters is refused, so a recipe with a key in
it cannot be applied (or be mistaken for a safe one).

Reading a recipe (:meth:`Recipe.load`, :meth:`Recipe.from_bytes`, :meth:`Recipe.from_json`) refuses, with a
:class:`~privdash.errors.ParameterError` that says what is wrong, anything but a recipe of sane size:

* **encoding**: UTF-8, with or without a byte-order mark. JSON exchanged between systems must be UTF-8 (RFC 8259,
  section 8.1); UTF-16 and UTF-32 are also read when a byte-order mark or the zero bytes of the first characters
  show them (RFC 4627, section 3; Windows editors save "Unicode" text so). Any other encoding (Latin-1,
  Windows-1252 ...) cannot be told apart from damaged UTF-8 and is refused, naming the first byte that is not UTF-8;
* **JSON**: strict JSON only: ``NaN``, ``Infinity`` and numbers beyond the float range (``1e999``) are refused, as
  are whole numbers outside the 64-bit range (a seed, a level or a count never needs more);
* **size**: at most :data:`MAX_RECIPE_BYTES` bytes, :data:`MAX_RECIPE_STEPS` steps and :data:`MAX_RECIPE_DEPTH`
  levels of nesting (a recipe written here nests about 8 levels);
* **shape**: an object with a ``steps`` list (and optionally ``privdash_recipe`` and ``max_suppression``), each step
  an object with a known ``kind`` (an unknown one is named with the closest known kind) and a ``params`` object.

Every step kind has one name, the technique's name (docs/definitions.md, "Fix techniques"). Recipes written before
the names were unified say ``local_recode``, ``postcode_recode``, ``geomask_donut``, ``geomask_perturb`` or
``shuffle``: :data:`STEP_ALIASES` reads them as the kinds they are now (a :class:`Step` made with an old kind holds
the new one), so old recipes load and re-save with the new names.

:func:`apply_step` checks every number among a step's parameters the same way (finite, whole numbers within 64
bits) before the step kind checks their ranges, so a step built in Python is held to what a recipe file is.
"""

from __future__ import annotations

import codecs
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from privdash.errors import ParameterError, check_fraction

__all__ = [
    "MAX_RECIPE_BYTES",
    "MAX_RECIPE_DEPTH",
    "MAX_RECIPE_STEPS",
    "RECIPE_VERSION",
    "STEP_ALIASES",
    "Recipe",
    "Step",
    "TransformResult",
    "apply_recipe",
    "apply_step",
    "canonical_kind",
    "check_json_numbers",
    "describe_value",
    "register_step",
    "registered_steps",
]

RECIPE_VERSION = 1
#: The largest recipe read: 64 MB (a recipe with the hierarchy table of a large column stays far below it).
MAX_RECIPE_BYTES = 64 * 2**20
#: The most steps a recipe may hold (each step rewrites the whole table).
MAX_RECIPE_STEPS = 1_000
#: The deepest nesting of objects and lists a recipe may hold.
MAX_RECIPE_DEPTH = 32
#: Whole numbers in a recipe or a step's parameters: those of a signed 64-bit integer.
_INT_LIMIT = 2**63 - 1
#: The keys of a recipe object and of a step object.
_RECIPE_KEYS = ("privdash_recipe", "steps", "max_suppression")
_STEP_KEYS = ("kind", "params")
#: Old spellings of step kinds (recipes written before the names were unified) -> the kind's name.
STEP_ALIASES: dict[str, str] = {
    "local_recode": "local_recoding",
    "postcode_recode": "postcode_recoding",
    "geomask_donut": "donut_masking",
    "geomask_perturb": "coordinate_perturbation",
    "shuffle": "shuffling",
}


def canonical_kind(kind: Any) -> Any:
    """The name of step kind ``kind`` (an old spelling of :data:`STEP_ALIASES` read as the new one)."""
    return STEP_ALIASES.get(kind, kind) if isinstance(kind, str) else kind


@dataclass(frozen=True)
class Step:
    """One transformation: its registered ``kind`` and JSON-serialisable parameters (a kind given by an old
    spelling, :data:`STEP_ALIASES`, is stored by its name)."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kind = canonical_kind(self.kind)
        if kind is not self.kind:
            object.__setattr__(self, "kind", kind)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Step:
        """The step an object ``{"kind": ..., "params": {...}}`` describes (the kind is checked when applied)."""
        if not isinstance(obj, Mapping) or not isinstance(obj.get("kind"), str):
            raise ParameterError(
                f"Each recipe step must be an object with a 'kind' and 'params', got {_json_type(obj)}."
            )
        kind = obj["kind"]
        unknown = [str(key) for key in obj if key not in _STEP_KEYS]
        if unknown:
            raise ParameterError(
                f"Recipe step '{kind}' has unknown key(s) {', '.join(repr(k) for k in unknown)}: a step holds only "
                "'kind' and 'params', and its parameters go inside 'params'."
            )
        params = obj.get("params", {})
        if not isinstance(params, Mapping):
            raise ParameterError(f"Recipe step '{kind}': 'params' must be an object, got {_json_type(params)}.")
        return cls(kind, dict(params))


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

    kind = canonical_kind(kind)

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
    function = _step_function(step.kind)
    check_json_numbers(step.params, f"Step '{step.kind}'")
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


def _step_function(kind: object) -> StepFunction:
    """The implementation of step ``kind``; an unknown kind raises :class:`ParameterError` with the closest one."""
    _load_builtin_steps()
    kind = canonical_kind(kind)
    function = _REGISTRY.get(kind) if isinstance(kind, str) else None
    if function is None:
        close = get_close_matches(str(kind), list(_REGISTRY), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ParameterError(
            f"Unknown step kind {describe_value(kind)}{hint}; known kinds: {', '.join(sorted(_REGISTRY))}."
        )
    return function


def check_json_numbers(value: Any, where: str) -> None:
    """Raise :class:`ParameterError` when a number inside ``value`` (objects and lists walked, other values left
    alone) is not finite or is a whole number beyond 64 bits; ``where`` starts the message (e.g. ``"Step 'pram'"``).
    The walk is iterative, so deep nesting cannot exhaust the stack."""
    pending: list[tuple[Any, str]] = [(value, "")]
    while pending:
        item, path = pending.pop()
        if isinstance(item, Mapping):
            pending.extend((child, f"{path}.{key}" if path else str(key)) for key, child in item.items())
        elif isinstance(item, list | tuple):
            pending.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int) and abs(item) > _INT_LIMIT:
            raise ParameterError(
                f"{where}: {path or 'the value'} is {describe_value(item)}, beyond the whole numbers a step takes "
                f"(at most {_INT_LIMIT:,} in size)."
            )
        elif isinstance(item, float) and not math.isfinite(item):
            raise ParameterError(f"{where}: {path or 'the value'} must be a finite number, got {item!r}.")


def describe_value(value: Any) -> str:
    """``repr(value)`` for a message, shortened: a whole number of many digits by its number of digits."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        digits = value.bit_length() * math.log10(2)
        return f"a whole number of about {digits:,.0f} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + " ... " + text[-10:]


def _json_type(value: Any) -> str:
    """The JSON name of a value's type, for messages."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return f"the text {describe_value(value)}"
    if value is None:
        return "null"
    return f"the value {describe_value(value)}"


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
        """The recipe a parsed JSON object describes; raises :class:`ParameterError` naming what is wrong."""
        if not isinstance(obj, Mapping):
            raise ParameterError(f"A recipe is a JSON object with a 'steps' list, got {_json_type(obj)}.")
        unknown = [str(key) for key in obj if key not in _RECIPE_KEYS]
        if unknown:
            hints = []
            for key in unknown:
                close = get_close_matches(key, _RECIPE_KEYS, n=1)
                hints.append(repr(key) + (f" (did you mean '{close[0]}'?)" if close else ""))
            raise ParameterError(
                f"The recipe has unknown key(s) {', '.join(hints)}; a recipe holds {', '.join(_RECIPE_KEYS)}."
            )
        steps = obj.get("steps")
        if not isinstance(steps, list):
            raise ParameterError(
                f"A recipe is a JSON object with a 'steps' list, but its 'steps' is {_json_type(steps)}."
                if "steps" in obj
                else "A recipe is a JSON object with a 'steps' list, and this one has no 'steps'."
            )
        version = obj.get("privdash_recipe", RECIPE_VERSION)
        if isinstance(version, bool) or version != RECIPE_VERSION:
            raise ParameterError(
                f"Recipe version {describe_value(version)} is not supported (expected {RECIPE_VERSION})."
            )
        if len(steps) > MAX_RECIPE_STEPS:
            raise ParameterError(
                f"The recipe has {len(steps):,} steps, more than the {MAX_RECIPE_STEPS:,} a recipe may hold."
            )
        _check_depth(obj)
        check_json_numbers(obj, "The recipe")
        parsed = []
        for number, item in enumerate(steps, start=1):
            try:
                step = Step.from_dict(item)
                _step_function(step.kind)
            except ParameterError as exc:
                raise ParameterError(f"Step {number} of the recipe: {exc}") from None
            parsed.append(step)
        limit = obj.get("max_suppression")
        return cls(tuple(parsed), None if limit is None else limit)

    @classmethod
    def from_json(cls, text: str, source: str = "The recipe") -> Recipe:
        """The recipe in JSON ``text``; ``source`` names it in messages (e.g. ``"The recipe fix.json"``)."""
        if len(text) > MAX_RECIPE_BYTES:
            raise ParameterError(f"{source} holds {len(text):,} characters, more than a recipe may ({_limit()}).")
        return cls.from_dict(_parse(text, source))

    @classmethod
    def from_bytes(cls, raw: bytes, source: str = "The recipe") -> Recipe:
        """The recipe in the file content ``raw`` (UTF-8, or UTF-16 / UTF-32 with a byte-order mark; see the module
        docstring); ``source`` names it in messages."""
        if len(raw) > MAX_RECIPE_BYTES:
            raise ParameterError(f"{source} is {len(raw):,} bytes, more than a recipe may be ({_limit()}).")
        return cls.from_dict(_parse(_decode(raw, source), source))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Recipe:
        """The recipe in the file at ``path`` (see :meth:`from_bytes`)."""
        source = f"The recipe {path}"
        try:
            size = Path(path).stat().st_size
            if size > MAX_RECIPE_BYTES:
                raise ParameterError(f"{source} is {size:,} bytes, more than a recipe may be ({_limit()}).")
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise ParameterError(f"Cannot read the recipe {path}: {exc.strerror or exc}.") from exc
        return cls.from_bytes(raw, source)


def _limit() -> str:
    return f"at most {MAX_RECIPE_BYTES // 2**20} MB"


#: Byte-order marks and the encodings they announce (UTF-32 first: its little-endian mark starts with UTF-16's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _decode(raw: bytes, source: str) -> str:
    """The text of a recipe file: UTF-8 (a byte-order mark allowed), or UTF-16 / UTF-32 recognised by their mark or
    by the zero bytes of the first two characters (RFC 4627, section 3); anything else is refused."""
    encoding = next((name for bom, name in _BOMS if raw.startswith(bom)), None)
    if encoding is None:
        encoding = json.detect_encoding(raw)  # the zero-byte patterns of UTF-16 / UTF-32 without a mark, else UTF-8
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        byte = raw[exc.start : exc.start + 1].hex()
        if encoding.startswith("utf-8"):
            raise ParameterError(
                f"{source} is not UTF-8 text: byte 0x{byte} at position {exc.start:,} is not UTF-8 (a Latin-1 or "
                "Windows-1252 file?). Save it as UTF-8: JSON files are exchanged in UTF-8 (RFC 8259)."
            ) from None
        raise ParameterError(
            f"{source} starts as {encoding.upper()} text but is not valid {encoding.upper()} (at byte "
            f"{exc.start:,}). Save it as UTF-8: JSON files are exchanged in UTF-8 (RFC 8259)."
        ) from None


def _parse(text: str, source: str) -> Any:
    """Strict JSON: no NaN or Infinity, finite floats, whole numbers within 64 bits, bounded nesting."""
    if not text.strip():
        raise ParameterError(f"{source} is empty: a recipe is a JSON object with a 'steps' list.")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_int=_whole_number, parse_float=_finite_number)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"{source} is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
    except RecursionError:
        raise ParameterError(
            f"{source} nests objects or lists more than {MAX_RECIPE_DEPTH} levels deep; a recipe nests about 8."
        ) from None
    except ParameterError as exc:
        raise ParameterError(f"{source} {exc}") from None


def _no_constant(name: str) -> Any:
    raise ParameterError(f"holds {name}, which is not a JSON number: write a finite number or null.")


def _whole_number(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > 19 or abs(int(text)) > _INT_LIMIT:
        shown = text if digits <= 30 else f"{text[:8]}...{text[-4:]} ({digits:,} digits)"
        raise ParameterError(
            f"holds the whole number {shown}, beyond what a recipe may hold (at most {_INT_LIMIT:,} in size)."
        )
    return int(text)


def _finite_number(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        shown = text if len(text) <= 30 else f"{text[:12]}...{text[-8:]}"
        raise ParameterError(f"holds the number {shown}, beyond the range of a floating-point number.")
    return number


def _check_depth(obj: Any) -> None:
    """Raise :class:`ParameterError` when ``obj`` nests deeper than :data:`MAX_RECIPE_DEPTH` (iteratively)."""
    pending: list[tuple[Any, int]] = [(obj, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, Mapping) else item if isinstance(item, list | tuple) else ()
        if children and depth >= MAX_RECIPE_DEPTH:
            raise ParameterError(
                f"The recipe nests objects or lists more than {MAX_RECIPE_DEPTH} levels deep; a recipe nests about 8."
            )
        pending.extend((child, depth + 1) for child in children if isinstance(child, Mapping | list | tuple))


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
    "privdash.transform.generalization",
    "privdash.geo.postcodes.recode",
    "privdash.transform.suppression",
    "privdash.transform.microaggregation",
    "privdash.transform.identifiers",
    "privdash.transform.perturbation",
    "privdash.geo.geomask",
    "privdash.transform.local_recoding",
    "privdash.synthesis.step",
)
