"""Model-based re-identification risk: sdcMicro's ``modRisk()`` (log-linear models of the key-variable table).

The sample frequencies ``f_k`` of the cells ``k`` of the key variables' cross-classification are taken as
independent Poisson counts whose means follow a log-linear model with the keys' main effects (and, optionally,
two-way interactions). The fitted mean ``lambda_k`` estimates the population frequency of the cell, and with ``p_k``
the cell's summed inclusion probability (the sum of ``1/w`` over its records) the probability that a sample unique
is also unique in the population, and the expected probability of a correct match, are (Skinner & Holmes 1998;
Rinott & Shlomo)::

    P(F_k = 1 | f_k = 1)   = exp(-(1 - p_k) lambda_k)
    E(1 / F_k | f_k = 1)   = (1 - exp(-v_k)) / v_k,      v_k = (1 - p_k) lambda_k

sdcMicro's two global measures, reproduced here to the letter (``R/modRisk.R`` of sdcMicro 5.8, commit
cf3251017482bb215f0a9abf4a930f502399fb72):

* the *grid* is the full product of each key's observed (non-missing) values, sample zeros included;
* ``risk1`` (sdcMicro ``gr1``) is the sum of ``P(F_k = 1 | f_k = 1)`` over the sample-unique cells divided by
  ``m``, the number of cells with ``0 < f_k <= bound`` and ``lambda_k > 0`` (so it is an average over the cells
  below the bound, not over the sample uniques, and with ``bound = inf`` over every non-empty cell); ``risk2``
  (``gr2``) likewise with ``E(1 / F_k | f_k = 1)``.

The five methods differ in how ``lambda`` is fitted:

``default``
    Poisson log-linear model ``counts ~ keys`` (a GLM on the grid).
``CE``
    Clogg & Eliason (1987): the same model with the offset ``log(f_k / W_k + 0.1)``, ``W_k`` the cell's weight
    sum (``0/0`` taken as 0, so an empty cell's offset is ``log 0.1``).
``PML``
    Pseudo maximum likelihood: the response is ``round(W_k * n / sum(w))`` (R's ``round``: halves to even), the
    weight sums scaled to the sample size, ``n / sum(w)`` taken over every record in scope.
``weightedLLM``
    The default model with the cell weight sum ``W_k`` as one more (numeric) covariate.
``IPF``
    ``MASS::loglm`` (iterative proportional fitting) of the main-effects model. Main effects have a closed form,
    which is used: ``lambda_k = prod_i n_i(k_i) / n^(d - 1)`` with ``n_i`` the margins of the ``d`` keys. sdcMicro
    refuses interactions for it, and so does :func:`model_risk`.

The keys are categorical (treatment contrasts; sdcMicro's ``createSdcObj`` makes every key variable a factor).
The GLMs are fitted by statsmodels' IRLS (Poisson family, log link) to a deviance change below
:data:`GLM_TOLERANCE`; R's ``glm`` stops at a relative change of 1e-8, so the two agree to about that precision.

Missing key values: sdcMicro's ``glm`` (and ``xtabs`` for IPF) leaves out every grid cell with a missing key, and
the merge that follows gives the records of such cells a fitted value of 0, which removes them from the risk and
from ``m``. The same here: records with a missing key are left out of the fit and of both measures; they still
count in PML's ``n / sum(w)``. A value seen only in records where another key is missing is still a value of the
grid (with zero margin: its cells get a fitted value near 0), as in sdcMicro.

References: Skinner, C.J. and Holmes, D.J. (1998), Estimating the re-identification risk per record in microdata,
Journal of Official Statistics 14:361-372. Rinott, Y. and Shlomo, N. (1998), A generalized negative binomial
smoothing model for sample disclosure risk estimation, Privacy in Statistical Databases, LNCS, 82-93. Clogg, C.C.
and Eliason, S.R. (1987), Some common problems in log-linear analysis, Sociological Methods and Research, 8-44.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privdash.constants import MODEL_RISK_METHODS
from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import EquivalenceClasses, MissingPolicy, equivalence_classes

__all__ = [
    "GLM_MAX_ITERATIONS",
    "GLM_TOLERANCE",
    "MAX_DESIGN_ENTRIES",
    "MAX_GRID_CELLS",
    "MODEL_RISK_METHODS",
    "ModelRisk",
    "check_model_request",
    "model_risk",
    "parse_model_risk_methods",
    "population_unique_probability",
]


#: Largest grid (product of the keys' numbers of observed values) fitted: a few arrays of this many floats.
MAX_GRID_CELLS = 2_000_000

#: Largest design matrix (grid cells x model columns) of a GLM method: 80 MB of float64, which IRLS copies a few
#: times (weighted design, least-squares workspace, the final pseudo-inverse), staying under about 1 GB.
MAX_DESIGN_ENTRIES = 10_000_000

#: IRLS stops when the deviance changes by less than this (absolute).
GLM_TOLERANCE = 1e-10

#: IRLS iterations at most (R's glm: 25; cells whose fitted value tends to 0 need more at the tighter tolerance).
GLM_MAX_ITERATIONS = 100

_IPF_INTERACTIONS = (
    "Method IPF fits the main effects only (as sdcMicro's modRisk): drop the interactions or choose another method."
)

_NO_WEIGHTS = (
    "No sampling weights: every weight is taken as 1, as sdcMicro does for data without a weight variable. Every "
    "inclusion probability is then 1, so each sample unique is taken to be unique in the population."
)


@dataclass(frozen=True, eq=False)
class ModelRisk:
    """sdcMicro's model-based risk (``modRisk``) of one method (see the module docstring).

    Attributes
    ----------
    method
        ``default``, ``CE``, ``PML``, ``weightedLLM`` or ``IPF``.
    keys, interactions
        The key variables (main effects) and the two-way interactions of the model.
    formula
        The model's terms as sdcMicro's ``formulaM``, e.g. ``~ sex + age + sex:age``.
    model
        The model fitted, with its response and any offset or extra covariate, in R's notation.
    bound
        Cells with ``0 < f_k <= bound`` make up the denominator ``m``.
    risk1, risk2
        sdcMicro's ``gr1`` and ``gr2``; None when not defined: no cell in the denominator, or (``risk2``) a
        sample unique whose inclusion probabilities sum to 1 (``v = 0`` gives ``0/0``, NaN in sdcMicro).
    risk_cells
        ``m``: the cells with ``0 < f_k <= bound`` and a positive fitted value.
    cells
        One row per grid cell: the key values, ``count`` (``f_k``), ``weight_sum`` (``W_k``), ``inclusion``
        (``p_k``, the sum of ``1/w``) and ``fitted`` (``lambda_k``, the population frequency estimate).
    sample_uniques
        One row per sample-unique cell of the denominator: the key values, ``inclusion``, ``fitted``,
        ``p_population_unique`` (``exp(-(1 - p) lambda)``, sdcMicro's per-cell risk1 before the division by
        ``m``) and ``p_match`` (``(1 - exp(-v)) / v``, its risk2).
    converged, iterations
        Whether IRLS converged, and in how many iterations (IPF: closed form, 0).
    warnings
        Plain sentences about the result (no weights, a fit that did not converge, an undefined measure, ...).
    """

    method: str
    keys: tuple[str, ...]
    interactions: tuple[tuple[str, str], ...]
    formula: str
    model: str
    bound: float
    risk1: float | None
    risk2: float | None
    risk_cells: int
    cells: pd.DataFrame = field(repr=False)
    sample_uniques: pd.DataFrame = field(repr=False)
    converged: bool = True
    iterations: int = 0
    warnings: tuple[str, ...] = ()

    @property
    def risk1_percent(self) -> float | None:
        return None if self.risk1 is None else 100 * self.risk1

    @property
    def risk2_percent(self) -> float | None:
        return None if self.risk2 is None else 100 * self.risk2

    @property
    def grid_cells(self) -> int:
        return len(self.cells)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (an infinite ``bound`` stays ``inf``; the CLI writes it as null)."""
        return {
            "method": self.method,
            "formula": self.formula,
            "model": self.model,
            "bound": self.bound,
            "risk1": self.risk1,
            "risk2": self.risk2,
            "risk1_percent": self.risk1_percent,
            "risk2_percent": self.risk2_percent,
            "grid_cells": self.grid_cells,
            "risk_cells": self.risk_cells,
            "sample_unique_cells": len(self.sample_uniques),
            "converged": self.converged,
            "warnings": list(self.warnings),
        }


def parse_model_risk_methods(methods: str | Sequence[str]) -> tuple[str, ...]:
    """Method names (a comma-separated string or a sequence, any letter case) as sdcMicro spells them, in the
    order given without repeats; :class:`ParameterError` listing the valid names for an unknown one."""
    names = [part.strip() for part in methods.split(",")] if isinstance(methods, str) else list(methods)
    out: list[str] = []
    for name in names:
        canonical = _method(name)
        if canonical not in out:
            out.append(canonical)
    return tuple(out)


def check_model_request(
    methods: str | Sequence[str], interactions: Sequence[tuple[str, str]], keys: Sequence[str]
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The methods (:func:`parse_model_risk_methods`) and interactions (pairs of ``keys``, each once) of a request,
    checked before any counting: unknown names, interactions of non-keys, interactions with IPF."""
    names = parse_model_risk_methods(methods)
    pairs = _interactions(interactions, tuple(keys))
    if "IPF" in names and pairs:
        raise ParameterError(_IPF_INTERACTIONS)
    return names, pairs


def _method(name: object) -> str:
    by_lower = {method.lower(): method for method in MODEL_RISK_METHODS}
    if isinstance(name, str) and name.strip().lower() in by_lower:
        return by_lower[name.strip().lower()]
    raise ParameterError(
        f"Unknown model-risk method {name!r}: choose among {', '.join(MODEL_RISK_METHODS)} (sdcMicro's modRisk)."
    )


def model_risk(
    data: pd.DataFrame | EquivalenceClasses,
    keys: Sequence[str] | None = None,
    weights: str | None = None,
    *,
    method: str = "default",
    interactions: Sequence[tuple[str, str]] = (),
    bound: float = math.inf,
) -> ModelRisk:
    """sdcMicro's ``modRisk``: global risk measures from a log-linear model of the key variables' table.

    Parameters
    ----------
    data
        One row per record (a DataFrame), or equivalence classes already counted (their counts, weight sums and
        inclusion-probability sums are the cells' values; any subset of their quasi-identifiers can be the keys).
    keys
        The key variables (categorical). Default with classes: their quasi-identifiers.
    weights
        Sampling-weight column of a DataFrame (classes carry their own). Without weights every weight is 1, with a
        warning sentence in the result.
    method
        ``default``, ``CE``, ``PML``, ``weightedLLM`` or ``IPF`` (any letter case).
    interactions
        Two-way interaction terms, pairs of keys (not with ``IPF``).
    bound
        Only cells with ``0 < f_k <= bound`` count in the denominator ``m`` (sdcMicro's ``bound``, default inf).

    Raises
    ------
    ParameterError
        An unknown method, ``bound <= 0``, interactions with ``IPF``, a key with fewer than two observed values,
        no record with every key observed, or a grid over :data:`MAX_GRID_CELLS` cells (a design over
        :data:`MAX_DESIGN_ENTRIES` entries).
    ColumnError
        A key or interaction that is not a column / quasi-identifier.
    """
    method = _method(method)
    bound = _bound(bound)
    notes: list[str] = []
    if isinstance(data, EquivalenceClasses):
        if weights is not None:
            raise ParameterError("Equivalence classes carry their own weight sums: give weights when counting them.")
        classes = data
        key_names = tuple(keys) if keys is not None else classes.quasi_identifiers
        if not key_names:
            raise ColumnError("No key variable given for the model-based risk.")
        unknown = [name for name in key_names if name not in classes.quasi_identifiers]
        if unknown:
            raise ColumnError(
                f"Key variables {', '.join(unknown)} are not quasi-identifiers of these classes "
                f"({', '.join(classes.quasi_identifiers)})."
            )
        if len(set(key_names)) != len(key_names):
            raise ColumnError(f"Key variables listed more than once: {', '.join(key_names)}.")
    elif isinstance(data, pd.DataFrame):
        if not keys:
            raise ColumnError("No key variable given for the model-based risk.")
        key_names = tuple(keys)
        classes = equivalence_classes(data, key_names, weights=weights, missing=MissingPolicy.VALUE)
    else:
        raise ParameterError(f"model_risk needs a DataFrame or equivalence classes, got {type(data).__name__}.")
    pairs = _interactions(interactions, key_names)
    if method == "IPF" and pairs:
        raise ParameterError(_IPF_INTERACTIONS)

    columns = [classes.quasi_identifiers.index(name) for name in key_names]
    codes = classes.class_codes[:, columns]
    counts = classes.counts.astype(np.float64)
    if classes.weight_sums is None:
        weight_sums, inverse_sums = counts, counts
        notes.append(_NO_WEIGHTS)
    else:
        pattern = classes.pattern_weight_sums
        if pattern is None and classes.missing_policy != MissingPolicy.WILDCARD:
            pattern = classes.weight_sums
        if pattern is None or classes.inverse_weight_sums is None:
            raise ParameterError(
                "These classes have no inclusion-probability sums (1/w per class): count them with "
                "equivalence_classes(..., weights=...) for the model-based risk."
            )
        weight_sums, inverse_sums = np.asarray(pattern, np.float64), np.asarray(classes.inverse_weight_sums)

    # The grid: every combination of the keys' observed values.
    levels = []
    for index, name in enumerate(key_names):
        column = codes[:, index]
        observed = np.unique(column[column >= 0])
        if len(observed) == 0:
            raise ParameterError(f"Key variable '{name}' is missing in every record: it cannot enter the model.")
        if len(observed) == 1:
            value = classes.categories[columns[index]][observed[0]]
            raise ParameterError(
                f"Key variable '{name}' has one observed value ('{value}'): a log-linear model needs at least two "
                "(sdcMicro's glm stops on it: contrasts need two levels). Leave it out of the keys."
            )
        levels.append(observed)
    dims = tuple(len(observed) for observed in levels)
    grid_size = math.prod(dims)
    product = " x ".join(str(d) for d in dims)
    if grid_size > MAX_GRID_CELLS:
        raise ParameterError(
            f"The model-based risk's grid is the product of the keys' numbers of values, {product} = {grid_size:,} "
            f"cells, over the limit of {MAX_GRID_CELLS:,}: use fewer or coarser keys."
        )
    n_columns = (
        1 + sum(d - 1 for d in dims) + sum((dims[a] - 1) * (dims[b] - 1) for a, b in _pair_positions(pairs, key_names))
    )
    n_columns += method == "weightedLLM"
    if method != "IPF" and grid_size * n_columns > MAX_DESIGN_ENTRIES:
        raise ParameterError(
            f"The model-based risk's design matrix would have {grid_size:,} grid cells ({product}) x {n_columns} "
            f"columns = {grid_size * n_columns:,} entries, over the limit of {MAX_DESIGN_ENTRIES:,}: use fewer or "
            "coarser keys, fewer interactions, or method IPF."
        )

    complete = (codes >= 0).all(axis=1)
    positions = np.column_stack(
        [np.searchsorted(observed, codes[complete, i]) for i, observed in enumerate(levels)]
    ).astype(np.int64)
    cell = np.ravel_multi_index(tuple(positions.T), dims) if len(positions) else np.zeros(0, np.int64)
    f = np.bincount(cell, weights=counts[complete], minlength=grid_size)
    w = np.bincount(cell, weights=weight_sums[complete], minlength=grid_size)
    p = np.bincount(cell, weights=inverse_sums[complete], minlength=grid_size)
    if not f.sum():
        raise ParameterError(
            f"No record has every key observed ({', '.join(key_names)}): the model-based risk has no cell to fit."
        )
    if not complete.all():
        left_out = int(counts[~complete].sum())
        notes.append(
            f"{left_out:,} records with a missing key value are left out of the model and of the risk "
            "(as sdcMicro's glm does)."
        )

    strides = [math.prod(dims[i + 1 :]) for i in range(len(dims))]

    def level(i: int) -> np.ndarray:
        """The level (0-based) of key ``i`` in every grid cell (C order: the last key varies fastest)."""
        return (np.arange(grid_size, dtype=np.int64) // strides[i]) % dims[i]

    converged, iterations = True, 0
    terms = " + ".join([*key_names, *(f"{a}:{b}" for a, b in pairs)])
    if method == "IPF":
        fitted = _ipf_main_effects(f, dims, level)
        model = f"loglm(counts ~ {terms}) (main effects: closed form)"
    else:
        response, offset, extra = f, None, None
        if method == "default":
            model = f"counts ~ {terms}"
        elif method == "CE":
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = f / w
            ratio[np.isnan(ratio)] = 0.0
            offset = np.log(ratio + 0.1)
            model = f"counts ~ {terms} + offset(log(counts / weights + 0.1))"
        elif method == "PML":
            scale = counts.sum() / weight_sums.sum()
            response = np.rint(w * scale)
            model = f"round(weights * n / sum(w)) ~ {terms}"
        else:  # weightedLLM
            extra = w
            model = f"counts ~ {terms} + weights"
        design = _design(grid_size, dims, level, _pair_positions(pairs, key_names), extra, n_columns)
        fitted, converged, iterations = _fit_poisson(response, design, offset)
        del design
        if not converged:
            notes.append(
                f"The {method} model did not converge in {GLM_MAX_ITERATIONS} iterations: the risk is from the "
                "last iteration."
            )

    in_risk = (f > 0) & (f <= bound) & ~((fitted == 0) & (f > 0))
    m = int(in_risk.sum())
    unique = in_risk & (f == 1)
    v = (1.0 - p[unique]) * fitted[unique]
    p_unique = np.exp(-v)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_match = -np.expm1(-v) / v
    risk1: float | None = float(p_unique.sum() / m) if m else None
    risk2: float | None = float(p_match.sum() / m) if m else None
    if not m:
        notes.append(f"No cell has 0 < count <= bound ({bound:g}): the model-based risk is not defined.")
    elif np.isnan(p_match).any():
        risk2 = None
        notes.append(
            "risk2 is not defined: a sample unique's inclusion probabilities sum to 1 (weight 1), where "
            "(1 - exp(-v)) / v is 0/0 (NaN in sdcMicro)."
        )
    if (p[unique] > 1).any():
        notes.append(
            "Some sample uniques have weights below 1 (inclusion probability above 1): their "
            "P(F=1 | f=1) = exp(-(1 - p) lambda) exceeds 1, as in sdcMicro."
        )

    labels = {
        name: pd.Categorical.from_codes(level(i), categories=classes.categories[columns[i]][levels[i]])
        for i, name in enumerate(key_names)
    }
    cells = pd.DataFrame({**labels, "count": f.astype(np.int64), "weight_sum": w, "inclusion": p, "fitted": fitted})
    where = np.flatnonzero(unique)
    uniques = pd.DataFrame(
        {
            **{name: values[where] for name, values in labels.items()},
            "inclusion": p[unique],
            "fitted": fitted[unique],
            "p_population_unique": p_unique,
            "p_match": p_match,
        }
    )
    return ModelRisk(
        method=method,
        keys=key_names,
        interactions=pairs,
        formula=f"~ {terms}",
        model=model,
        bound=bound,
        risk1=risk1,
        risk2=risk2,
        risk_cells=m,
        cells=cells,
        sample_uniques=uniques,
        converged=converged,
        iterations=iterations,
        warnings=tuple(notes),
    )


def _bound(bound: object) -> float:
    if isinstance(bound, bool) or not isinstance(bound, numbers.Real) or math.isnan(float(bound)) or bound <= 0:
        raise ParameterError(f"bound must be a number above 0 (or inf), got {bound!r}.")
    return float(bound)


def _interactions(interactions: Sequence[tuple[str, str]], keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Pairs of distinct keys, each once, in the keys' order."""
    out: list[tuple[str, str]] = []
    for pair in interactions:
        if isinstance(pair, str) or len(pair) != 2:
            raise ParameterError(f"An interaction is a pair of key variables, got {pair!r}.")
        a, b = pair
        unknown = [name for name in (a, b) if name not in keys]
        if unknown:
            raise ColumnError(
                f"Interaction {a}:{b} names {', '.join(unknown)}, not a key variable ({', '.join(keys)})."
            )
        if a == b:
            raise ParameterError(f"Interaction {a}:{b} pairs a key with itself.")
        ordered = (a, b) if keys.index(a) < keys.index(b) else (b, a)
        if ordered not in out:
            out.append(ordered)
    return tuple(out)


def _pair_positions(pairs: tuple[tuple[str, str], ...], keys: tuple[str, ...]) -> list[tuple[int, int]]:
    return [(keys.index(a), keys.index(b)) for a, b in pairs]


def _ipf_main_effects(f: np.ndarray, dims: tuple[int, ...], level: Any) -> np.ndarray:
    """loglm's fitted values of the main-effects model: the product of the margins over ``n^(d-1)``."""
    n = f.sum()
    table = f.reshape(dims)
    fitted = np.full(len(f), n)
    for i in range(len(dims)):
        margin = table.sum(axis=tuple(j for j in range(len(dims)) if j != i))
        fitted = fitted * (margin / n)[level(i)]
    return fitted


def _design(
    grid_size: int,
    dims: tuple[int, ...],
    level: Any,
    pairs: list[tuple[int, int]],
    extra: np.ndarray | None,
    n_columns: int,
) -> np.ndarray:
    """The model matrix with treatment contrasts (R's default): intercept, one indicator per non-first level of
    each key, one per pair of non-first levels of each interaction, and the extra covariate last."""
    design = np.zeros((grid_size, n_columns), dtype=np.float64)
    design[:, 0] = 1.0
    rows = np.arange(grid_size)
    column = 1
    cached = {i: level(i) for i in range(len(dims))}
    for i, d in enumerate(dims):
        lev = cached[i]
        on = lev > 0
        design[rows[on], column + lev[on] - 1] = 1.0
        column += d - 1
    for a, b in pairs:
        la, lb = cached[a], cached[b]
        on = (la > 0) & (lb > 0)
        design[rows[on], column + (la[on] - 1) * (dims[b] - 1) + lb[on] - 1] = 1.0
        column += (dims[a] - 1) * (dims[b] - 1)
    if extra is not None:
        design[:, column] = extra
    return design


def _fit_poisson(response: np.ndarray, design: np.ndarray, offset: np.ndarray | None) -> tuple[np.ndarray, bool, int]:
    """Fitted means of a Poisson log-linear GLM (statsmodels IRLS), whether it converged, and its iterations."""
    from statsmodels.genmod.families import Poisson  # heavy import, only when a GLM is fitted
    from statsmodels.genmod.generalized_linear_model import GLM
    from threadpoolctl import threadpool_limits  # with scikit-learn

    # One BLAS thread: the least-squares steps are on tall, narrow matrices, where threads gain little and, on a
    # busy machine, a threaded OpenBLAS waiting for its threads is many times slower.
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        # Sample zeros make some parameters tend to -inf (R: "fitted rates numerically 0 occurred") and a
        # saturated model fits exactly; neither changes the fitted values of the cells the risk reads.
        warnings.simplefilter("ignore")
        result = GLM(response, design, family=Poisson(), offset=offset).fit(
            method="IRLS", tol=GLM_TOLERANCE, maxiter=GLM_MAX_ITERATIONS
        )
    iterations = int(result.fit_history.get("iteration", 0))
    return np.asarray(result.mu, dtype=np.float64), bool(result.converged), iterations


def population_unique_probability(model: ModelRisk, classes: EquivalenceClasses) -> np.ndarray:
    """Per class of ``classes``, the model's estimated ``P(F = 1 | f = 1)`` of its record when the class is a
    sample-unique cell of the model (``exp(-(1 - p) lambda)``, sdcMicro's per-cell risk1 before the division by
    ``m``), NaN for every other class (larger classes, cells outside the denominator, a missing key).

    ``classes`` must be those the model was fitted on, or any classes over the same key values (the keys are
    matched by value)."""
    keys = list(model.keys)
    missing = [name for name in keys if name not in classes.quasi_identifiers]
    if missing:
        raise ParameterError(f"The classes have no key {', '.join(missing)} of the model.")
    left = classes.keys()[keys].astype(object).reset_index(drop=True)
    right = model.sample_uniques[[*keys, "p_population_unique"]].copy()
    for name in keys:
        right[name] = right[name].astype(object)
    joined = left.merge(right, on=keys, how="left", sort=False, validate="many_to_one")
    values = joined["p_population_unique"].to_numpy(dtype=np.float64)
    return np.where(np.asarray(classes.sizes) == 1, values, np.nan)
