"""The Fix page's "Perturb and mask" section without Dash: the columns each perturbative method applies to, the step
the user's choices describe, and its preview on the open dataset.

Methods (the core's registered steps, :mod:`privdash.transform.perturbation` and
:mod:`privdash.geo.geomask`): additive noise (``add_noise``) and rank swapping (``rank_swap``) on numerical
columns, PRAM (``pram``, sdcMicro's invariant matrix with ``pd`` and ``alpha``) on categorical columns, shuffling of
sensitive columns within the equivalence classes of the quasi-identifiers (``shuffle``) and, when the dataset has a
latitude / longitude pair (statistical type ``COORDINATE``), donut masking (``donut_masking``) or random perturbation
(``coordinate_perturbation``) of the points.

Once values are noisy, every record may be unique: class sizes and k say nothing about the risk. The preview
therefore measures what the method leaves (:func:`~privdash.measure.perturbed.perturbation_risk`):

* noise and swapping: distance-based record linkage (the share of published records whose nearest original record
  is their own), interval disclosure (sdcMicro ``dRisk``: records whose original values all lie within
  ``0.05 sd`` of the published ones), IL1s (mean ``|x - x'| / (sqrt(2) sd)``) and the mean relative change of
  means, variances and correlations;
* PRAM and shuffling: the share of cells changed and the distribution before and after (total variation distance
  ``1/2 sum |p_v - q_v|`` over the values ``v``);
* geomasking: spatial k-anonymity (Allshouse et al. 2010: original points at least as close to the masked point as
  its own original) and the displacement in metres, with a sample of the points for a map.

Every step draws from a seeded generator, and the seed is recorded in the step: the preview is reproducible, and
whoever holds the recipe and the published table can recompute the noise and remove it. The recipe stays with the
data owner.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from privdash.application.formats import fmt_count, fmt_number, fmt_share
from privdash.application.techniques import PERTURB, TECHNIQUES
from privdash.data.contract import ColumnRole, DataContract, StatisticalType
from privdash.data.tables import csv_text
from privdash.errors import PrivdashError
from privdash.geo.geomask import masking_points
from privdash.measure.perturbed import PerturbationRisk, perturbation_risk
from privdash.transform.perturbation import NOISE_METHODS, NUMERICAL_PERTURBATIONS
from privdash.transform.steps import Recipe, Step, apply_step
from privdash.validation import Interval, check_param

#: The techniques of the section that move points (offered when the dataset has coordinates).
_GEO = ("donut_masking", "coordinate_perturbation")

if TYPE_CHECKING:
    from privdash.application.services import LoadedDataset, Services

__all__ = [
    "CATEGORICAL_METHODS",
    "DISTRIBUTION_VALUES",
    "GEO_METHODS",
    "MAP_POINTS",
    "METHODS",
    "ColumnChange",
    "ProtectColumns",
    "ProtectError",
    "ProtectPreview",
    "default_seed",
    "metres",
    "perturbed_table",
    "preview_protection",
    "protect_columns",
    "protect_step",
    "recipe_json",
    "stored_step",
]

#: The methods on every dataset: step kind -> label (the techniques of the section,
#: :mod:`privdash.application.techniques`).
METHODS: dict[str, str] = {name: TECHNIQUES[name].label for name in PERTURB if name not in _GEO}
#: The methods offered when the dataset has a latitude / longitude pair.
GEO_METHODS: dict[str, str] = {name: TECHNIQUES[name].label for name in PERTURB if name in _GEO}
#: Methods that recode or move categories (judged by the cells they change, not by record linkage).
CATEGORICAL_METHODS = frozenset({"pram", "shuffling"})
#: Most points drawn on the map (a sample of the records, the same one for every preview of a table).
MAP_POINTS = 2_000
#: Values listed per column in the before / after distribution (the most frequent ones before).
DISTRIBUTION_VALUES = 10

_LATITUDE_NAME = re.compile(r"(^|[_ .-])lat(itude)?$", re.IGNORECASE)
_CATEGORICAL_TYPES = (StatisticalType.NOMINAL, StatisticalType.ORDINAL, StatisticalType.POSTCODE)


class ProtectError(PrivdashError):
    """The choices describe no step that can be applied (no column, a missing or malformed number)."""


def default_seed() -> int:
    """A fresh seed for the form. Not a fixed constant: a seed known to everyone would be a key known to everyone."""
    return secrets.randbelow(1_000_000_000)


# --- columns -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProtectColumns:
    """The columns each method may apply to, from the table's types and the contract's roles (column order).

    Attributes
    ----------
    numerical
        Numerical columns (numbers, not true/false, not coordinates, not identifiers): noise and swapping.
    categorical
        Nominal, ordinal or postcode columns that are not identifiers: PRAM.
    shufflable
        Columns that are neither quasi-identifiers nor identifiers: shuffling within the QI classes.
    sensitive, quasi_identifiers
        The contract's sensitive attributes and quasi-identifiers.
    latitudes, longitudes
        Coordinate columns, split by their names (``lat``, ``latitude``, optionally after a prefix word).
    """

    numerical: tuple[str, ...]
    categorical: tuple[str, ...]
    shufflable: tuple[str, ...]
    sensitive: tuple[str, ...]
    quasi_identifiers: tuple[str, ...]
    latitudes: tuple[str, ...] = ()
    longitudes: tuple[str, ...] = ()

    @property
    def has_coordinates(self) -> bool:
        return bool(self.latitudes) and bool(self.longitudes)

    def methods(self) -> dict[str, str]:
        """The methods this dataset offers: step kind -> label."""
        return {**METHODS, **(GEO_METHODS if self.has_coordinates else {})}

    def choices(self, method: str) -> tuple[str, ...]:
        """The columns ``method`` may apply to."""
        if method in NUMERICAL_PERTURBATIONS:
            return self.numerical
        if method == "pram":
            return self.categorical
        if method == "shuffling":
            return self.shufflable
        return ()

    def defaults(self, method: str) -> list[str]:
        """The columns chosen at first, from the contract: numerical quasi-identifiers and sensitive attributes for
        noise and swapping, categorical sensitive attributes (else the first categorical QI) for PRAM, the sensitive
        attributes for shuffling."""
        keyed = set(self.sensitive) | set(self.quasi_identifiers)
        if method in NUMERICAL_PERTURBATIONS:
            return [c for c in self.numerical if c in keyed] or list(self.numerical[:1])
        if method == "pram":
            sensitive = [c for c in self.categorical if c in self.sensitive]
            return sensitive or [c for c in self.categorical if c in self.quasi_identifiers][:1]
        if method == "shuffling":
            return [c for c in self.shufflable if c in self.sensitive]
        return []


def protect_columns(frame: pd.DataFrame, contract: DataContract) -> ProtectColumns:
    """The columns of ``frame`` each method may apply to, under ``contract``."""
    numerical: list[str] = []
    categorical: list[str] = []
    shufflable: list[str] = []
    latitudes: list[str] = []
    longitudes: list[str] = []
    fields = {item.name: item for item in contract.fields}
    for name in (str(c) for c in frame.columns):
        item = fields.get(name)
        role = item.role if item is not None else ColumnRole.INSENSITIVE
        kind = item.statistical_type if item is not None else StatisticalType.NOMINAL
        column = frame[name]
        number = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
        if kind == StatisticalType.COORDINATE and number:
            (latitudes if _LATITUDE_NAME.search(name) else longitudes).append(name)
            continue
        if role == ColumnRole.IDENTIFIER:
            continue
        if number and kind not in _CATEGORICAL_TYPES:
            numerical.append(name)
        elif kind in _CATEGORICAL_TYPES or pd.api.types.is_bool_dtype(column):
            categorical.append(name)
        if role != ColumnRole.QUASI_IDENTIFIER:
            shufflable.append(name)
    return ProtectColumns(
        numerical=tuple(numerical),
        categorical=tuple(categorical),
        shufflable=tuple(shufflable),
        sensitive=tuple(contract.sensitive),
        quasi_identifiers=tuple(contract.quasi_identifiers),
        latitudes=tuple(latitudes),
        longitudes=tuple(longitudes),
    )


# --- choices -> step -----------------------------------------------------------------------------------------------


def _number(value: Any, what: str) -> float:
    """A number from a form field; empty or non-numeric input raises :class:`ProtectError` naming the field (the
    ranges are the core's to check when the step is applied)."""
    name = what[0].upper() + what[1:]
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ProtectError(f"Give {what}.")
    return float(check_param(value, Interval(float, None, None), name, text=True, error=ProtectError))


def _seed(value: Any) -> int:
    """The seed of the form; an empty field draws one (recorded in the step, so the preview can be replayed)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default_seed()
    return int(check_param(value, TECHNIQUES["add_noise"].param("seed").constraint, "The seed", text=True,
                           error=ProtectError))  # fmt: skip


_NO_COLUMN = {
    "add_noise": "numerical column to add noise to",
    "rank_swap": "numerical column to swap",
    "pram": "categorical column to recode with PRAM",
    "shuffling": "column outside the quasi-identifiers to shuffle (mark the sensitive attributes on the Data page)",
}


def _chosen(method: str, columns: Sequence[str] | None, options: ProtectColumns) -> list[str]:
    allowed = options.choices(method)
    if not allowed:
        raise ProtectError(f"This dataset has no {_NO_COLUMN[method]}.")
    chosen = [str(c) for c in columns or ()]
    if not chosen:
        raise ProtectError(f"Choose at least one {_NO_COLUMN[method].split(' (')[0]}.")
    wrong = [c for c in chosen if c not in allowed]
    if wrong:
        raise ProtectError(
            f"{METHODS[method]} cannot be applied to {', '.join(repr(c) for c in wrong)}; "
            f"choose among {', '.join(allowed)}."
        )
    return chosen


def protect_step(
    method: str | None,
    options: ProtectColumns,
    *,
    columns: Sequence[str] | None = None,
    share: Any = None,
    noise: str | None = "uncorrelated",
    p: Any = None,
    pd_: Any = None,
    alpha: Any = None,
    latitude: str | None = None,
    longitude: str | None = None,
    min_distance: Any = None,
    max_distance: Any = None,
    scale: Any = None,
    distribution: str | None = "gaussian",
    k_target: Any = 5,
    seed: Any = None,
) -> Step:
    """The core step the choices describe (seed resolved, numbers parsed). The ranges of the parameters are the
    core's to check when the step is applied (:class:`~privdash.errors.ParameterError`); this function
    refuses what is missing or not a number (:class:`ProtectError`)."""
    methods = options.methods()
    if method not in methods:
        raise ProtectError(f"Choose a method: {', '.join(methods.values())}.")
    drawn = _seed(seed)
    if method == "add_noise":
        if noise not in NOISE_METHODS:
            raise ProtectError(f"Choose the kind of noise: {' or '.join(NOISE_METHODS)}.")
        params: dict[str, Any] = {
            "columns": _chosen(method, columns, options),
            "share": _number(share, "the noise's standard deviation (a share of each column's)"),
            "method": noise,
        }
    elif method == "rank_swap":
        params = {"columns": _chosen(method, columns, options), "p": _number(p, "p (the largest rank distance, %)")}
    elif method == "pram":
        params = {
            "columns": _chosen(method, columns, options),
            "pd": _number(pd_, "pd (the smallest probability of keeping a category)"),
            "alpha": _number(alpha, "alpha"),
        }
    elif method == "shuffling":
        if not options.quasi_identifiers:
            raise ProtectError(
                "Shuffling permutes values within the classes of the quasi-identifiers, and this dataset has none: "
                "mark them on the Data page."
            )
        params = {"columns": _chosen(method, columns, options), "quasi_identifiers": list(options.quasi_identifiers)}
    else:
        if latitude not in options.latitudes or longitude not in options.longitudes:
            raise ProtectError("Choose the latitude and the longitude column.")
        params = {"latitude": latitude, "longitude": longitude}
        if method == "donut_masking":
            params["min_distance"] = _number(min_distance, "the smallest displacement (metres)")
            params["max_distance"] = _number(max_distance, "the largest displacement (metres)")
        else:
            params["scale"] = _number(scale, "the scale of the displacement (metres)")
            params["distribution"] = distribution or "gaussian"
        whole = Interval(int, None, None)
        params["k_target"] = check_param(k_target, whole, "The target spatial k", text=True, error=ProtectError)
    params["seed"] = drawn
    return Step(method, params)


#: The parameters :func:`protect_step` writes, per step kind (those of the technique): a stored step with others was
#: not made here.
_PARAMETERS: dict[str, frozenset[str]] = {name: frozenset(p.name for p in TECHNIQUES[name].params) for name in PERTURB}


def stored_step(obj: Any) -> Step:
    """A step kept by the page (it comes back from the browser): only a kind and parameters this section makes,
    with a seed, are accepted, so a forged one cannot reach other steps or their options (polygon folders)."""
    try:
        step = Step.from_dict(obj)
    except PrivdashError as exc:
        raise ProtectError(f"The previewed step is not readable: {exc} Press Preview again.") from None
    allowed = _PARAMETERS.get(step.kind)
    if allowed is None or not set(step.params) <= allowed or not isinstance(step.params.get("seed"), int):
        raise ProtectError("The previewed step is not one of this section's: press Preview again.")
    return step


# --- preview -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ColumnChange:
    """What PRAM or shuffling did to one column: ``changed`` of its ``cells`` (one per record) hold another value.

    ``distribution`` has one row per value (the :data:`DISTRIBUTION_VALUES` most frequent before): ``value``,
    ``before`` and ``after`` (shares of the non-missing cells). ``total_variation`` is ``1/2 sum |p_v - q_v|`` over
    every value, 0 when the distribution is kept exactly.
    """

    column: str
    cells: int
    changed: int
    distribution: pd.DataFrame
    total_variation: float

    @property
    def share_changed(self) -> float:
        return self.changed / self.cells if self.cells else 0.0


@dataclass(frozen=True, eq=False)
class ProtectPreview:
    """The step applied to the open dataset and what it leaves.

    Attributes
    ----------
    step
        The step as applied (every parameter resolved, the seed included): the one-step recipe.
    data
        The perturbed table.
    summary
        The core's summary of the step.
    risk
        Noise and swapping: record linkage, interval disclosure and utility (None for the other methods).
    moments
        Noise and swapping: per column ``mean_before``, ``mean_after``, ``sd_before``, ``sd_after``.
    changes
        PRAM and shuffling: per column, the cells changed and the distribution before and after.
    spatial
        Geomasking: the core's spatial k (``min``, ``median``, ``target``, ``below_target``, ``share_below``) and
        displacement (``min``, ``median``, ``max`` metres).
    points
        Geomasking: original and masked points (:func:`~privdash.geo.geomask.masking_points`), a sample of at
        most :data:`MAP_POINTS`.
    reading
        One sentence in plain words.
    """

    step: Step
    data: pd.DataFrame
    summary: Mapping[str, Any]
    reading: str
    risk: PerturbationRisk | None = None
    moments: pd.DataFrame | None = None
    changes: tuple[ColumnChange, ...] = ()
    spatial: Mapping[str, Any] | None = None
    points: pd.DataFrame | None = None

    def recipe_json(self) -> str:
        return recipe_json(self.step)

    def csv(self) -> str:
        """The perturbed table as CSV, formula cells escaped (it is opened in spreadsheets)."""
        return csv_text(self.data)


def recipe_json(step: Step) -> str:
    """The one-step recipe of ``step`` as JSON text (it holds the seed: see the module docstring)."""
    return Recipe((step,)).to_json() + "\n"


Progress = Callable[[int, str], None]


def preview_protection(loaded: LoadedDataset, step: Step, progress: Progress | None = None) -> ProtectPreview:
    """Apply ``step`` to the open dataset with the core's step registry and measure what it leaves;
    ``progress(percent, text)`` hears of each stage.

    Raises
    ------
    SourceError
        A server-side source (its rows are not in the server's memory).
    ParameterError, ColumnError
        The core refuses the step's parameters or columns.
    """
    report = progress or (lambda _percent, _text: None)
    loaded.require_rows("Perturbing and masking")
    original = loaded.frame
    report(5, "Applying the step ...")
    result = apply_step(original, step)
    applied = result.step
    if applied.kind in NUMERICAL_PERTURBATIONS:
        columns = list(applied.params["columns"])
        report(40, "Linking every published record to its nearest original ...")
        risk = perturbation_risk(original, result.data, columns)
        return ProtectPreview(
            step=applied,
            data=result.data,
            summary=result.summary,
            reading=numerical_reading(risk),
            risk=risk,
            moments=_moments(original, result.data, columns),
        )
    if applied.kind in CATEGORICAL_METHODS:
        counted = result.summary["cells_changed"]
        changes = tuple(_column_change(original[c], result.data[c], int(counted[c])) for c in applied.params["columns"])
        moved = result.summary.get("records_moved") if applied.kind == "shuffling" else None
        return ProtectPreview(
            step=applied,
            data=result.data,
            summary=result.summary,
            reading=categorical_reading(applied.kind, changes, moved, len(original)),
            changes=changes,
        )
    latitude, longitude = str(applied.params["latitude"]), str(applied.params["longitude"])
    report(60, "Spatial k of the points on the map ...")
    points = masking_points(
        original,
        result.data,
        latitude=latitude,
        longitude=longitude,
        k_target=int(applied.params["k_target"]),
        sample=MAP_POINTS,
    )
    spatial = {"spatial_k": dict(result.summary["spatial_k"]), "displacement_m": dict(result.summary["displacement_m"])}
    return ProtectPreview(
        step=applied,
        data=result.data,
        summary=result.summary,
        reading=spatial_reading(spatial),
        spatial=spatial,
        points=points,
    )


def perturbed_table(services: Services, loaded: LoadedDataset, step: Step) -> pd.DataFrame:
    """The open dataset after ``step`` (a previewed step: seed recorded), for the download. Only the step is applied,
    not the risk measures; the table is kept in the services' cache under the dataset (id, version) and the step,
    so a second download does not apply it again (the seed makes it the same on every worker)."""
    loaded.require_rows("Perturbing and masking")
    key: tuple[Hashable, ...] = ("protect", loaded.id, loaded.version, json.dumps(step.to_dict(), sort_keys=True))
    table: pd.DataFrame = services.cache.get_or_build(key, lambda: apply_step(loaded.frame, step).data)
    return table


def _moments(original: pd.DataFrame, perturbed: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    before = original[list(columns)].astype("float64")
    after = perturbed[list(columns)].astype("float64")
    return pd.DataFrame(
        {
            "mean_before": before.mean(),
            "mean_after": after.mean(),
            "sd_before": before.std(ddof=1),
            "sd_after": after.std(ddof=1),
        }
    )


def _column_change(before: pd.Series, after: pd.Series, changed: int) -> ColumnChange:
    """The core's count of cells changed and the distribution of the non-missing values before and after."""
    p = before[before.notna().to_numpy()].astype(str).value_counts(normalize=True)
    q = after[after.notna().to_numpy()].astype(str).value_counts(normalize=True)
    both = p.index.union(q.index)
    p_all, q_all = p.reindex(both, fill_value=0.0), q.reindex(both, fill_value=0.0)
    total_variation = float(0.5 * (p_all - q_all).abs().sum())
    top = p.index[:DISTRIBUTION_VALUES]
    distribution = pd.DataFrame(
        {"value": top.astype(str), "before": p.reindex(top).to_numpy(), "after": q_all.reindex(top).to_numpy()}
    )
    return ColumnChange(
        column=str(before.name),
        cells=len(before),
        changed=changed,
        distribution=distribution,
        total_variation=total_variation,
    )


# --- readings ------------------------------------------------------------------------------------------------------


def numerical_reading(risk: PerturbationRisk) -> str:
    """The risk of noisy or swapped data in one sentence."""
    return (
        f"Someone who knows a person's true values finds that person's published record for "
        f"{fmt_share(risk.linkage)} of the records (nearest record); {fmt_share(risk.interval_disclosure)} of the "
        f"records have every published value within {fmt_number(risk.interval_k, 2)} standard deviation of the "
        f"truth; values moved by {fmt_number(risk.il1s)} standard deviation on average (IL1s)."
    )


def categorical_reading(method: str, changes: Sequence[ColumnChange], moved: int | None, records: int) -> str:
    """What PRAM or shuffling changed, in one sentence."""
    cells = sum(c.cells for c in changes)
    changed = sum(c.changed for c in changes)
    shift = max((c.total_variation for c in changes), default=0.0)
    names = ", ".join(c.column for c in changes)
    if method == "shuffling":
        if not moved:
            return (
                "No record moved: every class of the quasi-identifiers holds one record (or records with the same "
                f"{names} values), so shuffling within classes changes nothing here."
            )
        share = moved / records if records else 0.0
        return (
            f"{fmt_share(share)} of the records took the {names} values of another record of their class "
            f"({fmt_share(changed / cells if cells else 0.0)} of the cells differ); every class keeps its values, "
            "so statistics by class are unchanged."
        )
    return (
        f"PRAM published another category in {fmt_count(changed)} of {fmt_count(cells)} cells of {names} "
        f"({fmt_share(changed / cells if cells else 0.0)}); the distribution moved by at most "
        f"{fmt_share(shift)} (total variation distance)."
    )


def metres(value: float | None) -> str:
    """A distance in whole metres, with thousands separators."""
    return "-" if value is None else f"{round(float(value)):,}"


def spatial_reading(spatial: Mapping[str, Any]) -> str:
    """Spatial k and displacement in one sentence."""
    k = spatial["spatial_k"]
    moved = spatial["displacement_m"]
    if k["min"] is None:
        return "No record has both coordinates: nothing was masked."
    return (
        f"Points moved {metres(moved['min'])} to {metres(moved['max'])} m (median "
        f"{metres(moved['median'])} m); the weakest point has spatial k = {fmt_count(k['min'])}, and "
        f"{fmt_share(k['share_below'])} of the points have fewer than {fmt_count(k['target'])} original locations "
        "at least as close as their own."
    )
