"""Every fix technique, described once: its name, label, help text and parameters.

A technique's :attr:`Technique.name` is the one name it has everywhere: the ``kind`` of a step in the Fix page's
step list and in a share link, the ``kind`` of the step a recipe records (:mod:`privdash.transform.steps`; the
least-lossy ``search`` records a ``generalize`` or ``local_recoding`` step), the technique of ``privdash anonymize
--step`` and the name in docs/definitions.md. The Fix page builds its form from the parameters (label, bounds,
default, help), :func:`check_settings` validates a step's settings with the constraints of
:mod:`privdash.validation`, and :func:`parse_settings` reads the ``name=value`` settings of the command line.

Two sections of the Fix page use techniques: ``steps`` (the step list: settings only, carried by the link and
compiled to a core step by :func:`privdash.application.fixes.compile_spec`) and ``perturb`` (the "Perturb and mask"
section: one seeded step previewed on the dataset, :mod:`privdash.application.protect`).

Names given before the vocabulary was unified are still read (:data:`ALIASES`: links and recipes made with
``suppress_records``, ``top_bottom``, ``microaggregate``, ``shuffle`` ...), and so are old spellings of a
parameter (:attr:`Param.aliases`: a link's ``budget`` is ``max_suppression``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from privdash.errors import ParameterError, PrivdashError
from privdash.search.local import RECODING_CHOICES
from privdash.targets import DEFAULT_MAX_SUPPRESSION
from privdash.transform.perturbation import NOISE_METHODS
from privdash.transform.steps import RECIPE_VERSION, STEP_ALIASES
from privdash.utility.metrics import Metric
from privdash.validation import (
    Boolean,
    Column,
    Columns,
    Constraint,
    Interval,
    StrOptions,
    check_param,
)
from privdash.validation import Mapping as MappingConstraint

__all__ = [
    "ALIASES",
    "PERTURB",
    "SOLUTIONS",
    "STEPS",
    "TECHNIQUES",
    "Bounds",
    "Param",
    "Technique",
    "bounds",
    "canonical_name",
    "check_settings",
    "form_default",
    "parse_settings",
    "technique",
]

#: The solutions the least-lossy search keeps to choose from (also :data:`privdash.application.fixes.SOLUTIONS_SHOWN`).
SOLUTIONS = 5


@dataclass(frozen=True)
class Param:
    """One parameter of a technique.

    Attributes
    ----------
    name
        Its key in a step's settings (the link and the command line).
    constraint
        What a value must be (:mod:`privdash.validation`).
    label, help
        How the form names and explains it; ``label`` also names it in messages.
    default
        The value when it is not given; ``None`` with ``required`` False: left out.
    required
        Whether a step must give it.
    percent
        A share from 0 to 1 that the form shows as a percentage (0 to 100).
    form
        How the Fix form sets it: ``"input"`` (a control of its own), ``"view"`` (a checkbox that takes the view's
        target), ``"rule"`` (the hierarchy rule's controls) or ``"none"`` (not on the form; e.g. the solution picked
        from the search's table).
    omit_default
        Left out of the checked settings when it equals the default (a link made before it existed keeps its text).
    aliases
        Old spellings of the key, still read.
    choices
        The label of each option of a parameter with few options (a form shows them as radio buttons).
    """

    name: str
    constraint: Constraint
    label: str
    help: str = ""
    default: Any = None
    required: bool = False
    percent: bool = False
    form: str = "input"
    omit_default: bool = False
    aliases: tuple[str, ...] = ()
    choices: tuple[tuple[str, str], ...] = ()

    @property
    def widget(self) -> str:
        """How a form asks for the value: ``rule``, ``view`` or ``none`` (see :attr:`form`), else by its constraint:
        ``checkbox``, ``column``, ``columns``, ``choice`` (one of :attr:`options`), ``number`` or ``text``."""
        if self.form != "input":
            return self.form
        constraint = self.constraint
        if isinstance(constraint, Boolean):
            return "checkbox"
        if isinstance(constraint, Column):
            return "column"
        if isinstance(constraint, Columns):
            return "columns"
        if isinstance(constraint, StrOptions):
            return "choice"
        if isinstance(constraint, Interval):
            return "number"
        return "text"

    @property
    def options(self) -> tuple[str, ...]:
        """The options of a ``choice`` parameter (empty for others)."""
        return tuple(self.constraint.options) if isinstance(self.constraint, StrOptions) else ()

    @property
    def role(self) -> str | None:
        """The column role a column parameter offers first (its constraint's), or None."""
        return self.constraint.role if isinstance(self.constraint, Column | Columns) else None

    @property
    def numeric(self) -> bool:
        """Whether a column parameter takes numerical columns only."""
        return isinstance(self.constraint, Column) and self.constraint.numeric

    @property
    def min_items(self) -> int:
        """The fewest columns a ``columns`` parameter takes."""
        return self.constraint.min_items if isinstance(self.constraint, Columns) else 0


@dataclass(frozen=True)
class Technique:
    """A fix technique: its one :attr:`name`, how the page shows it, and its parameters.

    ``section`` is ``"steps"`` (the Fix page's step list, carried by the link) or ``"perturb"`` (the "Perturb and
    mask" section); ``recipe_kinds`` are the core step kinds a recipe records for it; ``slow`` techniques are
    previewed in a background job; ``recipe_version`` is the recipe format its steps are written in.
    """

    name: str
    label: str
    help: str
    params: tuple[Param, ...]
    section: str = "steps"
    recipe_kinds: tuple[str, ...] = ()
    slow: bool = False
    recipe_version: int = RECIPE_VERSION

    def param(self, name: str) -> Param:
        """The parameter ``name`` (or an old spelling of it)."""
        for item in self.params:
            if name == item.name or name in item.aliases:
                return item
        raise KeyError(name)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The recipe kinds of this technique (its own name when it records a step of that name)."""
        return self.recipe_kinds or (self.name,)


def _k(minimum: int, help_text: str = "Smallest class size to reach.") -> Param:
    return Param(
        "k", Interval(int, minimum, None, closed="left"), "k", help_text, default=max(minimum, 2), required=True
    )


def _limit(help_text: str) -> Param:
    return Param(
        "max_suppression",
        Interval(float, 0, 1),
        "The suppression limit",
        help_text,
        default=DEFAULT_MAX_SUPPRESSION,
        required=True,
        percent=True,
        aliases=("budget", "suppression"),
    )


_SHARE = Interval(float, 0, 1)
_SEED = Param(
    "seed",
    Interval(int, 0, 2**63 - 1),
    "Seed",
    "The same seed gives the same preview; empty draws a new one.",
)

_TECHNIQUES: tuple[Technique, ...] = (
    Technique(
        "generalize",
        "Generalize a quasi-identifier",
        "Replace the values of a column by a coarser level of its hierarchy (intervals, dates, prefixes ...).",
        (
            Param("column", Column(role="quasi_identifier"), "Column", "The column to generalize.", required=True),
            Param(
                "rule",
                MappingConstraint(),
                "Hierarchy",
                "How the hierarchy's levels are built (intervals, quantiles, dates, postcodes, prefixes ...).",
                required=True,
                form="rule",
            ),
            Param(
                "level",
                Interval(int, 0, None, closed="left"),
                "The level",
                "Level of the hierarchy (0: the values as they are).",
                default=1,
                required=True,
            ),
        ),
    ),
    Technique(
        "top_bottom_coding",
        "Top / bottom coding",
        "Values above the top threshold (below the bottom one) are published as the threshold, or as a label.",
        (
            Param(
                "column", Column(numeric=True), "Numeric column", "The column to top- or bottom-code.", required=True
            ),
            Param("top", Interval(float, None, None), "The top threshold", "Values above it are top-coded."),
            Param("bottom", Interval(float, None, None), "The bottom threshold", "Values below it are bottom-coded."),
            Param("quantiles", Boolean(), "Thresholds are quantiles (0 to 1)", default=False),
            Param("labels", Boolean(), "Publish labels (“>= 90”) instead of the threshold", default=False),
        ),
    ),
    Technique(
        "record_suppression",
        "Record suppression",
        "Records of classes smaller than k are removed, smallest classes first, within the suppression limit (the "
        "classes are formed as on the Risk page); then, for the risk rules, the riskiest records first.",
        (
            _k(2),
            _limit("Share of the records that may be removed."),
            Param(
                "release",
                MappingConstraint(),
                "The risk rules",
                "Also meet the view's risk rules (global, household and average risk).",
                form="view",
                omit_default=True,
            ),
        ),
    ),
    Technique(
        "local_suppression",
        "Local suppression (cells)",
        "QI cells are blanked, least important QIs first, until every record matches k records (a blank matches "
        "any value).",
        (
            _k(2),
            Param(
                "importance",
                Columns(role="quasi_identifier", min_items=0),
                "Importance (most important first)",
                "QIs most important first; the others follow, fewest distinct values first.",
                default=[],
            ),
        ),
    ),
    Technique(
        "microaggregation",
        "Microaggregation (k-member)",
        "The QIs of clusters of at least k similar records are replaced by the cluster's mean (numbers) or mode. "
        "Runs in the background: clustering large tables takes a while.",
        (
            _k(2),
            Param(
                "decimals",
                Interval(int, 0, None, closed="left"),
                "Round means to decimals",
                "Digits after the decimal point of the published means (empty: not rounded).",
            ),
        ),
        slow=True,
    ),
    Technique(
        "drop_identifiers",
        "Drop identifiers",
        "Remove direct identifiers (names, e-mail addresses ...) from the table.",
        (Param("columns", Columns(role="identifier"), "Columns", "The columns to remove.", required=True),),
    ),
    Technique(
        "mask_identifiers",
        "Mask identifiers",
        "Replace the characters of identifiers by '*', keeping some at the start and the end.",
        (
            Param("columns", Columns(role="identifier"), "Columns", "The columns to mask.", required=True),
            Param("first", Interval(int, 0, None, closed="left"), "Characters kept at the start", default=0),
            Param("last", Interval(int, 0, None, closed="left"), "Characters kept at the end", default=0),
        ),
    ),
    Technique(
        "pseudonymize",
        "Pseudonymize identifiers",
        "Replace identifiers by keyed hashes (HMAC-SHA256 with the server's key): the same value gets the same "
        "pseudonym, which cannot be reversed without the key.",
        (
            Param("columns", Columns(role="identifier"), "Columns", "The columns to pseudonymize.", required=True),
            Param(
                "length",
                Interval(int, 8, 64),
                "The pseudonym length",
                "Hexadecimal characters of each pseudonym.",
                default=16,
            ),
        ),
    ),
    Technique(
        "search",
        "Least-lossy search",
        "Searches every combination of generalization levels of the QIs (default hierarchies per type, or those "
        "that come with the dataset, such as ARX's for Adult) for the one of least loss meeting the targets, those "
        "of the verdict above by default (untick one to leave it out); a lattice too large to search whole is "
        f"searched best-first within a budget. Runs in the background; the best {SOLUTIONS} solutions are then "
        "listed to choose from. A local recoding starts from the most general levels and from that optimum, and "
        "splits groups of records to finer levels while each published class meets the targets.",
        (
            _k(1, "Smallest class size to reach (the verdict's k by default)."),
            _limit("Share of the records the search may suppress."),
            Param(
                "l", Interval(int, 1, None, closed="left"), "l", "l-diversity of the sensitive attributes.", form="view"
            ),
            Param("t", _SHARE, "t", "t-closeness of the sensitive attributes.", form="view"),
            Param(
                "max_risk",
                Interval(float, 0, 1, closed="right"),
                "The highest risk",
                "Highest prosecutor risk of a record.",
                form="view",
                aliases=("risk",),
            ),
            Param(
                "metric",
                StrOptions(tuple(m.value for m in Metric)),
                "Information loss to minimize",
                default=Metric.LOSS.value,
            ),
            Param(
                "recoding",
                StrOptions(RECODING_CHOICES),
                "Recoding",
                "Local recoding generalizes a value further only where it is rare: less loss, and a column may "
                "publish overlapping values (35-39 beside 30-39)",
                default="global",
                omit_default=True,
                choices=(
                    ("global", "Global: one level per QI for every record"),
                    ("local", "Local: levels may differ between groups of records"),
                ),
            ),
            Param(
                "release",
                MappingConstraint(),
                "The release rules",
                "Also meet the view's release rules (risk against the population, k-map ...).",
                form="view",
                omit_default=True,
            ),
            Param(
                "pick",
                Interval(int, 1, SOLUTIONS),
                "The solution picked",
                f"Which of the {SOLUTIONS} best solutions is published (1: the least lossy).",
                default=1,
                form="none",
                omit_default=True,
            ),
        ),
        recipe_kinds=("generalize", "local_recoding"),
        slow=True,
    ),
    # --- the "Perturb and mask" section ---
    Technique(
        "add_noise",
        "Additive noise",
        "Adds random noise to numerical columns (sdcMicro's addNoise).",
        (
            Param("columns", Columns(), "Numerical columns", required=True),
            Param(
                "share",
                Interval(float, 0, 100),
                "Noise sd (share of the column's sd)",
                "From 0 to 100; sdcMicro's addNoise(noise = 10) is 0.1",
                default=0.1,
                required=True,
            ),
            Param(
                "method",
                StrOptions(tuple(NOISE_METHODS)),
                "Noise",
                default="uncorrelated",
                required=True,
                choices=(
                    ("uncorrelated", "Uncorrelated (each column on its own)"),
                    ("correlated", "Correlated (keeps the correlations)"),
                ),
            ),
            _SEED,
        ),
        section="perturb",
    ),
    Technique(
        "rank_swap",
        "Rank swapping",
        "Swaps the values of numerical columns between records of close rank (sdcMicro's rankSwap).",
        (
            Param("columns", Columns(), "Numerical columns", required=True),
            Param(
                "p",
                Interval(float, 0, 100, closed="right"),
                "p: largest rank distance (% of the values)",
                "A percentage: sdcMicro's rankSwap(P = 0.05) is p = 5 (its code reads P as a fraction)",
                default=5,
                required=True,
            ),
            _SEED,
        ),
        section="perturb",
    ),
    Technique(
        "pram",
        "PRAM (random recoding)",
        "Recodes categories at random with an invariant transition matrix (sdcMicro's pram).",
        (
            Param("columns", Columns(), "Categorical columns", required=True),
            Param("pd", _SHARE, "pd", "Least chance to keep a category", default=0.8, required=True),
            Param("alpha", _SHARE, "alpha", "Share of the randomisation", default=0.5, required=True),
            _SEED,
        ),
        section="perturb",
    ),
    Technique(
        "shuffling",
        "Shuffle within classes",
        "Permutes the values of columns outside the quasi-identifiers within the classes of the quasi-identifiers.",
        (
            Param("columns", Columns(role="sensitive"), "Sensitive columns to shuffle", required=True),
            Param("quasi_identifiers", Columns(role="quasi_identifier"), "Quasi-identifiers", form="none"),
            _SEED,
        ),
        section="perturb",
    ),
    Technique(
        "donut_masking",
        "Donut masking of points",
        "Moves each point in a random direction by a distance between a smallest and a largest displacement.",
        (
            Param("latitude", Column(), "Latitude", required=True),
            Param("longitude", Column(), "Longitude", required=True),
            Param(
                "min_distance",
                Interval(float, 0, None, closed="left"),
                "Least move (m)",
                default=100,
                required=True,
            ),
            Param(
                "max_distance",
                Interval(float, 0, None, closed="neither"),
                "Largest move (m)",
                default=1000,
                required=True,
            ),
            Param("k_target", Interval(int, 1, None, closed="left"), "Target spatial k", default=5, required=True),
            _SEED,
        ),
        section="perturb",
    ),
    Technique(
        "coordinate_perturbation",
        "Random perturbation of points",
        "Moves each point by a random offset of the given scale (Gaussian or uniform).",
        (
            Param("latitude", Column(), "Latitude", required=True),
            Param("longitude", Column(), "Longitude", required=True),
            Param(
                "scale",
                Interval(float, 0, None, closed="neither"),
                "Scale (m)",
                default=250,
                required=True,
            ),
            Param(
                "distribution",
                StrOptions(("gaussian", "uniform")),
                "Distance",
                default="gaussian",
                required=True,
                choices=(("gaussian", "Half-normal (scale = sd)"), ("uniform", "Uniform (scale = largest move)")),
            ),
            Param("k_target", Interval(int, 1, None, closed="left"), "Target spatial k", default=5, required=True),
            _SEED,
        ),
        section="perturb",
    ),
)

#: Every technique by its name, in the order the page lists them.
TECHNIQUES: dict[str, Technique] = {item.name: item for item in _TECHNIQUES}
#: The techniques of the Fix page's step list (carried by the link).
STEPS: tuple[str, ...] = tuple(name for name, item in TECHNIQUES.items() if item.section == "steps")
#: The techniques of the "Perturb and mask" section.
PERTURB: tuple[str, ...] = tuple(name for name, item in TECHNIQUES.items() if item.section == "perturb")
#: Old names of techniques (links, recipes, Python functions made before the names were unified) -> the name.
ALIASES: dict[str, str] = {
    "top_bottom": "top_bottom_coding",
    "top_bottom_code": "top_bottom_coding",
    "suppress_records": "record_suppression",
    "suppress_cells": "local_suppression",
    "microaggregate": "microaggregation",
    "drop": "drop_identifiers",
    "mask": "mask_identifiers",
    "shuffle_within_classes": "shuffling",
    "donut_mask": "donut_masking",
    "perturb_coordinates": "coordinate_perturbation",
    **{old: new for old, new in STEP_ALIASES.items() if new in TECHNIQUES},
}


def canonical_name(name: Any) -> Any:
    """The technique name ``name`` stands for (an old spelling of :data:`ALIASES` read as the new one)."""
    return ALIASES.get(name, name) if isinstance(name, str) else name


def technique(name: Any, *, section: str | None = None, error: type[PrivdashError] = ParameterError) -> Technique:
    """The technique called ``name`` (or an old name of it), of ``section`` when given; raises ``error`` naming the
    techniques and the closest one."""
    known = [n for n, item in TECHNIQUES.items() if section is None or item.section == section]
    found = TECHNIQUES.get(canonical_name(name))
    if found is None or found.name not in known:
        close = get_close_matches(str(name), known, n=1) if isinstance(name, str) else []
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise error(f"Unknown technique {str(name)[:40]!r}{hint}: one of {', '.join(known)}.")
    return found


def check_settings(
    item: Technique, settings: Mapping[str, Any], *, error: type[PrivdashError] = ParameterError
) -> dict[str, Any]:
    """The settings of one step of ``item`` checked against its parameters: old spellings of keys read, unknown
    keys refused, required ones demanded, every value checked by its constraint and put in canonical form, defaults
    filled in (parameters with ``omit_default`` left out when they equal the default). Raises ``error``."""
    given: dict[str, Any] = {}
    unknown = []
    for key, value in settings.items():
        if key == "kind":
            continue
        try:
            param = item.param(str(key))
        except KeyError:
            unknown.append(str(key)[:40])
            continue
        if param.name not in given or key == param.name:
            given[param.name] = value
    if unknown:
        raise error(f"Step '{item.name}' has unknown setting(s) {', '.join(sorted(unknown))}.")
    missing = [p.name for p in item.params if p.required and given.get(p.name) is None and p.form != "view"]
    if missing:
        raise error(f"Step '{item.name}' needs {', '.join(missing)}.")
    out: dict[str, Any] = {}
    for param in item.params:
        value = given.get(param.name)
        if value is None:
            value = _copy(param.default)
        if value is not None:
            value = check_param(value, param.constraint, param.label, error=error)
        if param.omit_default and (value is None or value == param.default or value == {}):
            continue
        out[param.name] = value
    return out


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def parse_settings(
    item: Technique, texts: Sequence[str], *, error: type[PrivdashError] = ParameterError
) -> dict[str, Any]:
    """The settings ``name=value`` texts (the command line's) stand for: each value parsed by its parameter's
    constraint (``k=5`` -> 5, ``columns=a,b`` -> a list, ``labels=true``); not yet checked (see
    :func:`check_settings`)."""
    out: dict[str, Any] = {}
    for text in texts:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise error(f"Technique '{item.name}': write each setting as name=value, got {text[:40]!r}.")
        try:
            param = item.param(key)
        except KeyError:
            names = ", ".join(p.name for p in item.params if p.form != "none")
            raise error(f"Technique '{item.name}' has no setting {key[:40]!r}; its settings: {names}.") from None
        percent = param.percent and value.strip().endswith("%")
        parsed = param.constraint.parse(value.strip().removesuffix("%") if percent else value)
        if percent and isinstance(parsed, int | float):
            parsed = parsed / 100
        out[param.name] = parsed
    return out


def form_default(param: Param) -> Any:
    """The value a form shows first for ``param`` (percentages as 0 to 100)."""
    default = _copy(param.default)
    if param.percent and isinstance(default, int | float):
        shown = 100 * default
        return int(shown) if float(shown).is_integer() else shown
    return default


@dataclass(frozen=True)
class Bounds:
    """The bounds a number input shows (percentages as 0 to 100), and its step."""

    min: float | None = None
    max: float | None = None
    step: float = 1
    whole: bool = True


def bounds(param: Param) -> Bounds:
    """The number input's bounds of a numerical parameter (unbounded for others)."""
    constraint = param.constraint
    if not isinstance(constraint, Interval):
        return Bounds()
    scale = 100 if param.percent else 1
    whole = constraint.kind is int or param.percent
    low = None if constraint.left is None else constraint.left * scale
    high = None if constraint.right is None else constraint.right * scale
    return Bounds(low, high, 1 if whole else 0.05, whole)
