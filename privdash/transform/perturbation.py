"""Perturbative masking: additive noise, rank swapping, PRAM and shuffling within equivalence classes.

Unlike generalization and suppression, these steps publish *wrong* values on purpose: every record keeps its
place, but a value may be noisy, come from another record or be recoded at random. Class sizes and k then say
nothing about the risk; :mod:`privdash.measure.perturbed` measures it (record linkage, interval disclosure)
together with the utility lost.

Every step draws from a :class:`numpy.random.Generator`. The ``seed`` parameter (an integer >= 0) is recorded in the
step, so a saved recipe re-applied to the same data publishes exactly the same values; without one, a seed is drawn
from the operating system's entropy and recorded. The Python functions also accept a ready ``Generator`` as
``seed`` (injected as IBM diffprivlib's ``random_state``); the step then records ``seed: None`` and cannot be
replayed.

Additive noise (Brand 2002, "Microdata protection through noise addition", LNCS 2316; sdcMicro ``addNoise``)
---------------------------------------------------------------------------------------------------------
``share`` is the standard deviation of the noise as a share of each column's standard deviation ``sd_j`` (sample
standard deviation, n - 1, of the non-missing values, as R's ``sd``):

* ``uncorrelated``: ``x'_ij = x_ij + e_ij`` with independent ``e_ij ~ N(0, (share * sd_j)^2)``; sdcMicro's
  ``addNoise(method = "additive", noise = 100 * share)``.
* ``correlated``: ``x'_i = x_i + e_i`` with ``e_i ~ N(0, share^2 * Sigma)``, ``Sigma`` the sample covariance of the
  selected columns over the complete records. The noise has the correlation structure of the data, so
  correlations are preserved in expectation and every covariance is multiplied by ``1 + share^2``; each column's
  noise still has standard deviation ``share * sd_j``. This is sdcMicro's ``addNoise(method = "correlated",
  noise = 100 * share^2)`` (sdcMicro multiplies ``Sigma`` itself by ``noise / 100``). It is *not* sdcMicro's
  ``correlated2``, Kim's transformation ``x * sqrt(1 - delta^2) + delta * N(...)`` that also restores means and
  variances.

``share`` lies in [0, :data:`MAX_NOISE_SHARE`] (noise a hundred times the column's spread already leaves nothing of
the values); noise whose published values would overflow the floating-point range is refused. Missing values stay
missing.

Rank swapping (Moore 1996, "Controlled data-swapping techniques for masking public use microdata sets", US Census
Bureau; sdcMicro ``rankSwap`` with ``P``)
-------------------------------------------------------------------------------------------------------------
Each column is swapped on its own. Its ``m`` non-missing values are ranked (ties by row position); two values may
be exchanged only when their ranks differ by at most ``D = floor(p / 100 * m)``. Moore's algorithm walks the ranks
and picks each partner at random among the unswapped values within ``D`` ranks above, a sequential loop. Here the
same constraints are met in whole-array operations: the ranks are cut into consecutive windows of ``D + 1`` ranks
(the first window starts at a random offset, so no rank is always at a window's edge), and within every window the
values are paired at random and each pair exchanges its values. As in Moore's algorithm every value is swapped at
most once, with a partner at most ``D`` ranks away (a window of odd size leaves one value in place); the partner's
rank distance is spread over ``1 .. D`` (triangular rather than uniform). sdcMicro's top and bottom coding
before swapping (``TopPercent``, ``BottomPercent``) is not applied; use the ``top_bottom_coding`` step first.
Missing values are not swapped.

``p`` is a *percentage*, as sdcMicro's documentation describes ``rankSwap(P = )``; sdcMicro's code, however, reads
``P`` as a *fraction* of the values (its C++ ``RankSwap`` takes partners up to ``floor(P * m) - 1`` ranks away,
``m`` the values neither missing nor top / bottom coded, while ``TopPercent`` and ``BottomPercent`` are divided by
100). So privdash's ``p = 5`` is sdcMicro's ``rankSwap(P = 0.05, TopPercent = 0, BottomPercent = 0)``, and
sdcMicro's ``rankSwap(P = 5)`` lets any two values of the column swap (privdash's ``p = 100``). To reproduce an
sdcMicro call, give ``p = 100 * P``.

PRAM, the post-randomisation method (Gouweleeuw, Kooiman, Willenborg & de Wolf 1998, "Post randomisation for
statistical disclosure control: theory and implementation", Journal of Official Statistics 14(4); Kooiman,
Willenborg & Gouweleeuw 1997, "PRAM: a method for disclosure limitation of microdata", Statistics Netherlands)
-------------------------------------------------------------------------------------------------------------
A record with category ``i`` is published as category ``j`` with probability ``P[i, j]``, independently of the
other records. ``matrix`` gives ``P`` as ``{original: {published: probability}}`` (missing entries are 0; each row
must sum to 1). Without it, the *invariant* matrix of sdcMicro's ``pram(pd, alpha)`` is built from the column's
observed distribution ``p``: a base matrix ``P`` with diagonal ``d_i ~ U(pd, 1)`` and ``(1 - d_i) / (L - 1)``
elsewhere, its reverse ``Q[k, j] = P[j, k] p_j / sum_l p_l P[l, k]``, and ``R = alpha * P Q + (1 - alpha) * I``.
Either matrix is dense: a column is recoded over at most :data:`MAX_PRAM_CATEGORIES` categories.
``p R = p``: the expected distribution of the published column is the original one. Missing values stay missing.

Shuffling within equivalence classes
------------------------------------
The values of the sensitive ``columns`` are permuted at random among the records of each equivalence class of the
``quasi_identifiers`` (records with equal QI values; a missing value is a value). Several columns move together, one
permutation per class, so their joint distribution within each class is kept. Each class keeps the multiset of its
values: any statistic by class is unchanged, while the link between a record and its sensitive value is broken.
"""

from __future__ import annotations

import math
import secrets
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas
import pandas as pd

from privdash._deprecation import deprecated_alias
from privdash.errors import ColumnError, ParameterError, check_columns, check_fraction, format_values
from privdash.transform.steps import Step, TransformResult, describe_value, register_step

__all__ = [
    "MAX_NOISE_SHARE",
    "MAX_PRAM_CATEGORIES",
    "NOISE_METHODS",
    "NUMERICAL_PERTURBATIONS",
    "PERTURBATIVE_STEPS",
    "add_noise",
    "invariant_pram_matrix",
    "perturbed_numeric_columns",
    "pram",
    "rank_swap",
    "shuffling",
]

NOISE_METHODS = ("uncorrelated", "correlated")
#: Step kinds whose output values are wrong on purpose (risk is measured by record linkage, not by k).
PERTURBATIVE_STEPS = frozenset({"add_noise", "rank_swap", "pram", "shuffling"})
#: Perturbative step kinds that change numerical values (noise, swapping).
NUMERICAL_PERTURBATIONS = frozenset({"add_noise", "rank_swap"})

# Row sums of a transition matrix may differ from 1 by rounding in the JSON they come from, no more.
_ROW_SUM_TOLERANCE = 1e-9
#: The largest noise share: noise with a standard deviation 100 times the column's.
MAX_NOISE_SHARE = 100.0
#: The most categories PRAM recodes in one column (its transition matrix is dense: 2,000 categories take 32 MB).
MAX_PRAM_CATEGORIES = 2_000
#: Seeds are recorded in recipes, whose whole numbers fit 64 bits.
_MAX_SEED = 2**63 - 1

Seed = int | np.random.Generator | None


# --- shared helpers -----------------------------------------------------------------------------------------------


def _generator(seed: Seed) -> tuple[np.random.Generator, int | None]:
    """The generator to draw from and the seed to record (None when a generator was injected)."""
    if isinstance(seed, np.random.Generator):
        return seed, None
    if seed is None:
        seed = secrets.randbits(63)  # recorded, so the step can be replayed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed <= _MAX_SEED:
        raise ParameterError(f"seed must be a whole number from 0 to {_MAX_SEED:,}, got {describe_value(seed)}.")
    return np.random.default_rng(int(seed)), int(seed)


def _columns(data: pd.DataFrame, columns: object, *, role: str, parameter: str = "columns") -> tuple[str, ...]:
    """:func:`check_columns` for a list of names; a single name given as text is refused (it would be read as a list
    of its characters)."""
    if isinstance(columns, str) or not isinstance(columns, Sequence):
        raise ParameterError(
            f'{parameter} must be a list of column names (e.g. ["age"]), got {describe_value(columns)}.'
        )
    return check_columns(data, columns, role=role)


def _number(value: object, name: str, meaning: str) -> float:
    """``value`` as a finite float; anything else (text, true/false, NaN, infinity, a whole number beyond the float
    range) raises :class:`ParameterError` naming ``name`` and what it means."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ParameterError(f"{name} must be a number ({meaning}), got {describe_value(value)}.")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ParameterError(f"{name} must be a finite number ({meaning}), got {describe_value(value)}.")
    return number


def _numeric_column(data: pd.DataFrame, name: str, step: str) -> np.ndarray:
    """The column as float64; a column that is not numerical raises :class:`ColumnError`."""
    column = data[name]
    if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
        raise ColumnError(
            f"{step} needs numerical columns; '{name}' holds {column.dtype} values "
            f"(e.g. {format_values(column.dropna().unique()[:3].tolist(), 3)})."
        )
    return column.to_numpy(dtype=np.float64, na_value=np.nan)


def _publish_numeric(original: pd.Series, values: np.ndarray) -> pd.Series:
    """Noisy values as floats (an integer column cannot hold them), with the original index."""
    return pd.Series(values, index=original.index, name=original.name)


# --- additive noise -----------------------------------------------------------------------------------------------


def add_noise(
    data: pd.DataFrame,
    *,
    columns: Sequence[str],
    share: float,
    method: str = "uncorrelated",
    seed: Seed = None,
) -> TransformResult:
    """Add Gaussian noise with standard deviation ``share * sd_j`` to each numerical column (see the module
    docstring for ``uncorrelated`` and ``correlated`` noise).

    Raises
    ------
    ParameterError
        ``share`` outside [0, :data:`MAX_NOISE_SHARE`] or not a number, an unknown ``method``, a bad ``seed``,
        ``correlated`` noise with fewer than two complete records, noisy values beyond the floating-point range.
    ColumnError
        Unknown or non-numerical columns.
    """
    names = _columns(data, columns, role="column to add noise to")
    meaning = "the noise's standard deviation over the column's"
    share = _number(share, "share", meaning)
    if not 0 <= share <= MAX_NOISE_SHARE:
        raise ParameterError(f"share must lie in [0, {MAX_NOISE_SHARE:g}] ({meaning}), got {share:g}.")
    if method not in NOISE_METHODS:
        raise ParameterError(f"Unknown noise method {method!r}; choose one of {', '.join(NOISE_METHODS)}.")
    rng, recorded = _generator(seed)
    x = np.column_stack([_numeric_column(data, name, "Noise addition") for name in names])
    step = Step("add_noise", {"columns": list(names), "share": float(share), "method": method, "seed": recorded})
    if len(data) == 0:
        return TransformResult(data.copy(), step, {"records": 0, "cells_changed": dict.fromkeys(names, 0)})
    n, d = x.shape
    missing = np.isnan(x)
    complete = ~missing.any(axis=1)
    if method == "correlated" and complete.sum() < 2:
        raise ParameterError("Correlated noise needs at least two records with every selected column present.")
    # Values near the float range overflow the spread or the noise: the published values are checked below.
    with np.errstate(over="ignore", invalid="ignore"):
        if method == "uncorrelated":
            sd = _sample_sd(x)
            noise = rng.standard_normal((n, d))
            noise *= share * sd
        else:
            sigma = np.atleast_2d(np.cov(x[complete], rowvar=False))
            if not np.isfinite(sigma).all():
                sigma = np.full_like(sigma, np.inf)
                noise = np.full((n, d), np.inf)
            else:
                # A square root of Sigma through its eigen-decomposition: unlike Cholesky it accepts singular
                # covariances (a constant or collinear column), whose tiny negative eigenvalues from rounding are
                # clipped to 0.
                eigenvalues, vectors = np.linalg.eigh(sigma)
                root = vectors * np.sqrt(np.clip(eigenvalues, 0.0, None))
                noise = rng.standard_normal((n, d)) @ (share * root).T
            sd = np.sqrt(np.diag(sigma))
        published = x + noise
    published[missing] = np.nan
    overflow = ~missing & ~np.isfinite(published)
    if overflow.any():
        column = names[int(np.flatnonzero(overflow.any(axis=0))[0])]
        raise ParameterError(
            f"Noise of share {share:g} on '{column}' gives numbers beyond the floating-point range (its values or "
            "their spread are too large): lower the share or rescale the column."
        )
    output = data.copy()
    changed = {}
    for j, name in enumerate(names):
        output[name] = _publish_numeric(data[name], published[:, j])
        changed[name] = int((~missing[:, j] & (published[:, j] != x[:, j])).sum())
    summary = {
        "records": n,
        "method": method,
        "share": float(share),
        "noise_sd": {name: float(share * s) for name, s in zip(names, sd, strict=True)},
        "cells_changed": changed,
    }
    return TransformResult(output, step, summary)


def _sample_sd(x: np.ndarray) -> np.ndarray:
    """Sample standard deviation (n - 1) of each column over its non-missing values; 0 below two values."""
    counts = (~np.isnan(x)).sum(axis=0)
    sd = np.zeros(x.shape[1])
    enough = counts >= 2
    if enough.any():
        sd[enough] = np.nanstd(x[:, enough], axis=0, ddof=1)
    return sd


# --- rank swapping ------------------------------------------------------------------------------------------------


def rank_swap(data: pd.DataFrame, *, columns: Sequence[str], p: float, seed: Seed = None) -> TransformResult:
    """Swap the values of each numerical column in pairs whose ranks differ by at most ``floor(p / 100 * m)``
    (``m`` non-missing values; see the module docstring). ``p`` is a percentage: sdcMicro's ``rankSwap(P = x)``,
    whose code reads ``P`` as a fraction, is ``p = 100 * x``.

    Raises
    ------
    ParameterError
        ``p`` outside (0, 100], a bad ``seed``.
    ColumnError
        Unknown or non-numerical columns.
    """
    names = _columns(data, columns, role="column to swap")
    meaning = "the largest rank distance, as a percentage of the values"
    p = _number(p, "p", meaning)
    if not 0 < p <= 100:
        raise ParameterError(
            f"p must be a percentage in (0, 100] ({meaning}; sdcMicro's rankSwap(P = x) is p = 100 * x), got {p:g}."
        )
    rng, recorded = _generator(seed)
    step = Step("rank_swap", {"columns": list(names), "p": float(p), "seed": recorded})
    output = data.copy()
    changed: dict[str, int] = {}
    distances: dict[str, int] = {}
    for name in names:
        values = _numeric_column(data, name, "Rank swapping")
        swapped, distance = _swap_column(values, float(p), rng)
        distances[name] = distance
        changed[name] = int((swapped != values).sum() - (np.isnan(values)).sum())
        if pd.api.types.is_integer_dtype(data[name]) and not np.isnan(values).any():
            # Swapping only moves existing values, so an integer column stays integer.
            output[name] = pd.Series(swapped, index=data.index, name=name).astype(data[name].dtype)
        else:
            output[name] = _publish_numeric(data[name], swapped)
    summary = {"records": len(data), "p": float(p), "max_rank_distance": distances, "cells_changed": changed}
    return TransformResult(output, step, summary)


def _swap_column(values: np.ndarray, p: float, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """The column after rank swapping, and the largest rank distance allowed."""
    present = np.flatnonzero(~np.isnan(values))
    m = len(present)
    distance = int(np.floor(p / 100.0 * m + 1e-9))
    out = values.copy()
    if distance < 1 or m < 2:
        return out, distance
    width = distance + 1
    order = present[np.argsort(values[present], kind="stable")]  # rows by rank
    rank = np.arange(m)
    offset = int(rng.integers(0, width))
    window = (rank + (width - offset)) // width  # windows of `width` ranks; the first holds `offset` ranks
    # A random order within each window: sort by window number plus a uniform draw in [0, 1). Windows hold
    # consecutive ranks, so each window's records land on its own rank positions, in random order.
    shuffled = np.argsort(window + rng.random(m))
    position_in_window = np.where(window == 0, rank, (rank - offset) % width)
    # Consecutive positions (0, 1), (2, 3) ... of one window pair up.
    first = np.flatnonzero((position_in_window[:-1] % 2 == 0) & (window[1:] == window[:-1]))
    a, b = order[shuffled[first]], order[shuffled[first + 1]]
    out[a], out[b] = values[b], values[a]
    return out, distance


# --- PRAM ---------------------------------------------------------------------------------------------------------


def invariant_pram_matrix(
    frequencies: np.ndarray,
    *,
    pd_: float = 0.8,
    alpha: float = 0.5,
    seed: Seed = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """sdcMicro's invariant transition matrix ``alpha * P Q + (1 - alpha) I`` for the category frequencies given
    (see the module docstring); ``p R = p`` for ``p = frequencies / sum``. ``seed``: a whole number or a
    :class:`numpy.random.Generator` to draw from (None: fresh); ``rng`` is its old name, read for one release with a
    :class:`DeprecationWarning`."""
    if rng is not None:
        warnings.warn("invariant_pram_matrix(rng=...) is deprecated: the keyword is seed", DeprecationWarning, 2)
        seed = rng
    rng, _ = _generator(seed)
    p = np.asarray(frequencies, dtype=np.float64)
    p = p / p.sum()
    size = len(p)
    if size < 2:
        return np.eye(size)
    diagonal = rng.uniform(pd_, 1.0, size)
    base = np.repeat(((1.0 - diagonal) / (size - 1))[:, None], size, axis=1)
    np.fill_diagonal(base, diagonal)
    # Q[k, j] = P[j, k] p_j / sum_l p_l P[l, k]: the probability of original j given published k.
    published = p @ base
    reverse = (base * p[:, None]).T / published[:, None]
    return alpha * (base @ reverse) + (1.0 - alpha) * np.eye(size)


def pram(
    data: pd.DataFrame,
    *,
    columns: Sequence[str],
    matrix: Mapping[Any, Mapping[Any, float]] | None = None,
    pd: float = 0.8,  # sdcMicro's name (shadows the pandas alias here: use `pandas` in this function)
    alpha: float = 0.5,
    seed: Seed = None,
) -> TransformResult:
    """Recode each categorical column at random with a transition matrix: ``matrix`` (``{original: {published:
    probability}}``, categories matched by their text) or sdcMicro's invariant matrix with ``pd`` and ``alpha``.

    Raises
    ------
    ParameterError
        A matrix row that does not sum to 1 (named, with its sum), negative or non-numeric probabilities, a
        non-square matrix, values of the column missing from the matrix, ``pd`` or ``alpha`` outside [0, 1].
    ColumnError
        Unknown columns.
    """
    names = _columns(data, columns, role="column to PRAM")
    given = _check_matrix(matrix) if matrix is not None else None
    pd_ = check_fraction(_number(pd, "pd", "the smallest probability of keeping a category"), "pd")
    alpha = check_fraction(_number(alpha, "alpha", "the share of the randomisation"), "alpha")
    rng, recorded = _generator(seed)
    params: dict[str, Any] = {"columns": list(names), "seed": recorded}
    if given is not None:
        params["matrix"] = {row: dict(cells) for row, cells in zip(given[0], _rows_as_dicts(*given), strict=True)}
    else:
        params.update({"pd": pd_, "alpha": alpha})
    step = Step("pram", params)
    output = data.copy()
    changed: dict[str, int] = {}
    matrices: dict[str, dict[str, dict[str, float]]] = {}
    for name in names:
        column = data[name]
        # Distinct values first: only they are turned into text and looked up.
        raw_codes, uniques = pandas.factorize(column, use_na_sentinel=True)
        missing = raw_codes < 0
        texts = [str(value) for value in uniques.tolist()]
        if given is not None:
            categories, transition = given
            position = {category: i for i, category in enumerate(categories)}
            unknown = [text for text in texts if text not in position]
            if unknown:
                raise ParameterError(
                    f"PRAM of '{name}': the transition matrix has no row for the value(s) {format_values(unknown)}; "
                    f"its categories are {format_values(categories, 10)}."
                )
            row_of_unique = np.array([position[text] for text in texts], dtype=np.int64)
        else:
            categories = sorted(set(texts))
            if len(categories) > MAX_PRAM_CATEGORIES:
                raise ParameterError(
                    f"PRAM of '{name}': the column has {len(categories):,} categories, more than the "
                    f"{MAX_PRAM_CATEGORIES:,} PRAM recodes (its transition matrix is dense): generalize it first."
                )
            position = {category: i for i, category in enumerate(categories)}
            row_of_unique = np.array([position[text] for text in texts], dtype=np.int64)
            counts = np.bincount(row_of_unique[raw_codes[~missing]], minlength=len(categories))
            transition = invariant_pram_matrix(counts, pd_=pd_, alpha=alpha, seed=rng) if categories else np.eye(0)
            matrices[name] = dict(zip(categories, _rows_as_dicts(categories, transition), strict=True))
        codes = np.where(missing, -1, row_of_unique[np.maximum(raw_codes, 0)] if len(texts) else -1)
        new_codes = _draw_transitions(codes, transition, rng)
        changed[name] = int((new_codes != codes).sum())
        seen = dict(zip(texts, uniques.tolist(), strict=True))
        output[name] = _decode(column, categories, seen, new_codes, missing)
    summary: dict[str, Any] = {"records": len(data), "cells_changed": changed}
    if matrices:
        summary["matrices"] = matrices
    return TransformResult(output, step, summary)


def _check_matrix(matrix: object) -> tuple[list[str], np.ndarray]:
    """Categories (as text) and the transition matrix; raises :class:`ParameterError` naming what is wrong."""
    if not isinstance(matrix, Mapping) or not matrix:
        raise ParameterError(
            "The PRAM matrix must be a non-empty object {original category: {published category: probability}}."
        )
    categories = [str(key) for key in matrix]
    if len(categories) > MAX_PRAM_CATEGORIES:
        raise ParameterError(
            f"The PRAM matrix has {len(categories):,} categories, more than the {MAX_PRAM_CATEGORIES:,} PRAM recodes "
            "(the matrix is dense)."
        )
    if len(set(categories)) != len(categories):
        raise ParameterError("The PRAM matrix names a category twice (categories are compared as text).")
    index = {category: i for i, category in enumerate(categories)}
    size = len(categories)
    transition = np.zeros((size, size))
    for i, (row, cells) in enumerate(matrix.items()):
        if not isinstance(cells, Mapping):
            raise ParameterError(
                f"Row '{row}' of the PRAM matrix must be an object {{published category: probability}}."
            )
        for target, probability in cells.items():
            if str(target) not in index:
                raise ParameterError(
                    f"Row '{row}' of the PRAM matrix moves records to '{target}', which has no row of its own: the "
                    "matrix must be square (every published category is also an original one)."
                )
            if isinstance(probability, bool) or not isinstance(probability, int | float) or probability != probability:
                raise ParameterError(
                    f"PRAM matrix entry ['{row}']['{target}'] must be a number, got {describe_value(probability)}."
                )
            if probability < 0 or probability > 1:
                raise ParameterError(
                    f"PRAM matrix entry ['{row}']['{target}'] must be a probability in [0, 1], got "
                    f"{describe_value(probability)}."
                )
            transition[i, index[str(target)]] = float(probability)
        total = float(transition[i].sum())
        if abs(total - 1.0) > _ROW_SUM_TOLERANCE:
            raise ParameterError(f"Row '{row}' of the PRAM matrix sums to {total:.10g}, not 1.")
    return categories, transition


def _rows_as_dicts(categories: Sequence[str], transition: np.ndarray) -> list[dict[str, float]]:
    """Each row of ``transition`` as ``{published: probability}`` without zeros (for recipes and summaries)."""
    return [
        {categories[j]: float(transition[i, j]) for j in np.flatnonzero(transition[i] > 0).tolist()}
        for i in range(len(categories))
    ]


def _draw_transitions(codes: np.ndarray, transition: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per record from row ``codes[i]`` of ``transition`` (code -1, a missing value, stays -1).

    Row ``i``'s cumulative probabilities are shifted by ``i``, so all rows form one sorted array: the published
    category of a record in row ``c`` with uniform draw ``u`` is found by a single binary search for ``c + u``.
    """
    out = np.full(len(codes), -1, dtype=np.int64)
    present = codes >= 0
    size = transition.shape[0]
    if size == 0 or not present.any():
        return out
    cumulative = np.cumsum(transition, axis=1)
    cumulative[:, -1] = 1.0  # rows sum to 1 up to rounding; the last bound must be exact
    shifted = (cumulative + np.arange(size)[:, None]).ravel()
    rows = codes[present]
    targets = rows + rng.random(len(rows))
    found = np.searchsorted(shifted, targets, side="right")
    out[present] = np.minimum(found - rows * size, size - 1)
    return out


def _decode(
    column: pd.Series,
    categories: Sequence[str],
    seen: Mapping[str, Any],
    codes: np.ndarray,
    missing: np.ndarray,
) -> pd.Series:
    """Published codes back to values of the column's own kind: a category seen in the column maps to that value;
    one only in the matrix is read as a number when the column holds numbers. Missing values stay as they were."""
    numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    values: list[Any] = []
    for category in categories:
        if category in seen:
            values.append(seen[category])
        elif numeric:
            number = pd.to_numeric(category, errors="coerce")
            if pd.isna(number):
                raise ParameterError(
                    f"PRAM of '{column.name}': the matrix publishes '{category}', which is not a number, into a "
                    "numerical column."
                )
            values.append(number)
        else:
            values.append(category)
    try:
        table = pd.Series(values, dtype=column.dtype)
    except (TypeError, ValueError):
        table = pd.Series(values, dtype=object)
    if len(table) == 0:
        return column.copy()
    out = pd.Series(table.to_numpy()[np.maximum(codes, 0)], index=column.index, name=column.name)
    if missing.any():
        out = out.where(~missing, column)
    return out


# --- shuffling within equivalence classes -------------------------------------------------------------------------


def shuffling(
    data: pd.DataFrame, *, columns: Sequence[str], quasi_identifiers: Sequence[str], seed: Seed = None
) -> TransformResult:
    """Permute the values of ``columns`` at random within each equivalence class of ``quasi_identifiers`` (one
    permutation per class for all ``columns``).

    Raises
    ------
    ColumnError
        Unknown columns, or a column that is both shuffled and a quasi-identifier.
    ParameterError
        A bad ``seed``.
    """
    names = _columns(data, columns, role="column to shuffle")
    qis = _columns(data, quasi_identifiers, role="quasi-identifier", parameter="quasi_identifiers")
    both = [name for name in names if name in qis]
    if both:
        raise ColumnError(
            f"{', '.join(both)} cannot be shuffled within the classes it defines: it is also a quasi-identifier."
        )
    rng, recorded = _generator(seed)
    step = Step("shuffling", {"columns": list(names), "quasi_identifiers": list(qis), "seed": recorded})
    n = len(data)
    if n == 0:
        empty = {"records": 0, "classes": 0, "cells_changed": dict.fromkeys(names, 0)}
        return TransformResult(data.copy(), step, empty)
    classes = data.groupby(list(qis), dropna=False, sort=False).ngroup().to_numpy()
    rows_by_class = np.argsort(classes, kind="stable")  # each class's rows, in row order
    shuffled = np.lexsort((rng.random(n), classes))  # each class's rows, in random order
    source = np.empty(n, dtype=np.int64)
    source[rows_by_class] = shuffled  # row r takes the values of row source[r], from its own class
    output = data.copy()
    changed: dict[str, int] = {}
    for name in names:
        original = data[name]
        moved = original.iloc[source]
        moved.index = original.index
        output[name] = moved
        unchanged = moved.to_numpy() == original.to_numpy()
        both_missing = moved.isna().to_numpy() & original.isna().to_numpy()
        changed[name] = int(n - (unchanged | both_missing).sum())
    summary = {
        "records": n,
        "classes": int(classes.max()) + 1,
        "records_moved": int((source != np.arange(n)).sum()),
        "cells_changed": changed,
    }
    return TransformResult(output, step, summary)


# --- registered steps ---------------------------------------------------------------------------------------------


@register_step("add_noise")
def _add_noise_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return add_noise(data, **params)


@register_step("rank_swap")
def _rank_swap_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return rank_swap(data, **params)


@register_step("pram")
def _pram_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return pram(data, **params)


@register_step("shuffling")
def _shuffle_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return shuffling(data, **params)


def perturbed_numeric_columns(steps: Sequence[Step], data: pd.DataFrame) -> list[str]:
    """The numerical columns of ``data`` that noise or rank swapping change among ``steps``, in order of
    appearance, once each: the columns whose risk is measured by record linkage and interval disclosure. (PRAM and
    shuffling recode categories or move values between records; numbers there are usually codes, so they are left
    to the steps' counts of changed cells.)"""
    names: list[str] = []
    for step in steps:
        if step.kind not in NUMERICAL_PERTURBATIONS:
            continue
        for name in step.params.get("columns", ()):
            column = data[name] if name in data.columns else None
            if column is None or name in names:
                continue
            if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
                names.append(name)
    return names


# Old names, kept for one release (a call warns with a DeprecationWarning).
shuffle_within_classes = deprecated_alias(shuffling, "shuffle_within_classes")
