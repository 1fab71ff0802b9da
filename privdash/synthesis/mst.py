"""DP synthetic data by MST (McKenna, Sheldon and Miklau 2021, "Winning the NIST Contest: A scalable and general
approach to differentially private synthetic data"), every noisy measurement made by OpenDP.

Unit of privacy: one record (neighbouring tables differ by one added or removed record, OpenDP's symmetric
distance at d_in = 1); with a person-id column and a bound of c rows per person, one person: their rows are first
truncated to c (:func:`privdash.dp.contributions.bound_contributions`) and every measurement below is calibrated at
d_in = c (a count moves by at most c, a score of the selection by at most c, and key selection uses its threshold
for c rows). Steps, with the budget (ε, δ) split under basic sequential composition:

1. **Domains.** A numeric column is cut into ``bins`` equal-width bins between its declared bounds (values are
   clamped into them; a column that can hold missing values gets one more cell for "missing"); without bounds it
   is refused. A boolean column has the domain (False, True). A text column uses its declared domain, or else its
   categories are chosen by DP key selection (:func:`privdash.dp.release.dp_histogram` without a domain: discrete
   Laplace counts of the data's own values, kept when they reach the threshold τ whose exact δ fits), with
   ε/4 shared equally by those columns and all of δ shared equally by them. A value outside its column's domain is
   counted nowhere.
2. **1-way marginals.** Each column's histogram over its domain, with discrete Laplace noise (sensitivity 1), at
   one third of the rest of ε shared equally by the d columns.
3. **Selection.** A maximum spanning tree over the columns, grown as in Kruskal's algorithm: d - 1 rounds, each
   choosing one pair of columns not yet connected with OpenDP's noisy max (the exponential mechanism's
   report-noisy-max form) at one third of the rest of ε shared by the rounds. The score of a pair is MST's: the L1
   distance between its true 2-way marginal and the product of the two noisy 1-way marginals (how much the pair
   is *not* independent, a proxy for their mutual information whose sensitivity is 1, where the mutual
   information's sensitivity depends on the row count).
4. **2-way marginals.** The histogram of each pair of the tree over the product of their domains, with discrete
   Laplace noise, at the last third shared by the d - 1 pairs.
5. **Sampling.** Negative noisy counts are clipped to 0. The number of records comes from the noisy 1-way totals (the
   exact count is private): their inverse-variance weighted mean over the numeric and boolean columns, which count
   every record, else the largest total. The tree's first column is drawn from its noisy 1-way marginal, and each
   next column, along the tree's edges, from the noisy 2-way marginal's conditional given its parent's drawn value
   (the child's 1-way marginal where that row of the table is all zero). A numeric value is drawn uniformly inside
   its bin (rounded for an integer column). This replaces the inference step of MST's reference code (private-pgm /
   mbi, which fits one graphical model consistent with all the noisy marginals): that library is not installed,
   and on a tree the conditionals of the measured marginals already define the distribution to sample; the price
   is that the 1-way and 2-way measurements are not reconciled with each other (only the 2-way ones shape the
   conditionals). Everything after the measurements is post-processing and costs no budget.

The noise comes from OpenDP's cryptographically secure generator, which cannot be seeded: the seed fixes the
sampling step only, so two dp releases with the same seed differ (as they must: a reproducible noise would be no
noise to whoever knows the seed).

The allotments of the parts sum to the settings' ε and δ (each measurement's loss, proven by OpenDP's map, is at
most its allotment), so the release costs exactly the settings' (ε, δ) and :attr:`SyntheticRelease.privacy`
carries that.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from privdash.dp.mechanisms import Mechanism, PrivacyBudget, accuracy, calibrate, out_of_range, uses_contrib
from privdash.errors import ColumnError, ParameterError

if TYPE_CHECKING:
    from privdash.synthesis.release import SynthesisSettings

__all__ = ["MAX_PAIR_CELLS", "BudgetSplit", "budget_split", "mst_synthesize"]

#: The largest domain of one 2-way marginal (cells) accepted.
MAX_PAIR_CELLS = 1_000_000
#: The share of ε spent on DP key selection when some text column has no declared domain.
KEY_SELECTION_SHARE = 0.25

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class BudgetSplit:
    """The allotment of each measurement (ε, and δ for key selection) under basic sequential composition."""

    key_selection: tuple[PrivacyBudget, ...]  # one per text column without a declared domain
    one_way: float  # ε of each of the d 1-way marginals
    selection: float  # ε of each of the d - 1 rounds of the tree's selection
    two_way: float  # ε of each of the d - 1 2-way marginals
    columns: int

    def total(self) -> PrivacyBudget:
        """The sum of the allotments (at most the settings' ε and δ, equal to them up to the last digit)."""
        rounds = max(self.columns - 1, 0)
        epsilon = math.fsum(
            [b.epsilon for b in self.key_selection]
            + [self.one_way] * self.columns
            + [self.selection, self.two_way] * rounds
        )
        return PrivacyBudget(epsilon, math.fsum(b.delta for b in self.key_selection))

    def describe(self) -> str:
        """One line: ε of each kind of measurement."""
        parts = []
        if self.key_selection:
            ks = self.key_selection[0]
            parts.append(f"key selection {len(self.key_selection)} x (ε {ks.epsilon:.4g}, δ {ks.delta:.3g})")
        parts.append(f"1-way {self.columns} x ε {self.one_way:.4g}")
        if self.columns > 1:
            rounds = self.columns - 1
            parts.append(f"selection {rounds} x ε {self.selection:.4g}")
            parts.append(f"2-way {rounds} x ε {self.two_way:.4g}")
        return "; ".join(parts)


def _share(total: float, parts: int) -> float:
    """``total / parts``, rounded down until ``parts`` copies sum to at most ``total``."""
    value = total / parts
    while math.fsum([value] * parts) > total:
        value = math.nextafter(value, 0.0)
    return value


def budget_split(epsilon: float, delta: float, columns: int, key_selection: int) -> BudgetSplit:
    """The split of (ε, δ) over MST's measurements (module docstring): ε/4 to key selection when ``key_selection``
    columns need it (δ all to them), the rest in thirds to the 1-way marginals, the selection and the 2-way
    marginals (all to the 1-way marginals for one column)."""
    if columns < 1:
        raise ParameterError("A DP synthetic table needs at least one column.")
    selected: tuple[PrivacyBudget, ...] = ()
    rest = epsilon
    if key_selection:
        if delta <= 0:
            raise ParameterError(
                "DP key selection chooses the categories of text columns without a declared domain and needs δ > 0 "
                "(--delta, e.g. 1e-6); or declare every text column's domain."
            )
        spent = epsilon * KEY_SELECTION_SHARE
        each = PrivacyBudget(_share(spent, key_selection), _share(delta, key_selection))
        selected = (each,) * key_selection
        rest = epsilon - math.fsum([each.epsilon] * key_selection)
    if columns == 1:
        return BudgetSplit(selected, rest, 0.0, 0.0, 1)
    third = rest / 3
    one = _share(third, columns)
    sel = _share(third, columns - 1)
    two = _share(rest - math.fsum([one] * columns) - math.fsum([sel] * (columns - 1)), columns - 1)
    return BudgetSplit(selected, one, sel, two, columns)


@dataclass(frozen=True)
class _Column:
    name: str
    kind: str  # "numeric", "text" or "bool"
    codes: np.ndarray  # each record's cell (-1: outside the domain, counted nowhere)
    labels: list[Any]  # text/bool: the value of each cell; numeric: bin edges handled by low/high
    cells: int
    low: float = 0.0
    high: float = 0.0
    bins: int = 0
    missing_cell: bool = False


def _is_numeric(series: pd.Series) -> bool:
    return (
        pd.api.types.is_numeric_dtype(series.dtype)
        and not pd.api.types.is_bool_dtype(series.dtype)
        and not isinstance(series.dtype, pd.CategoricalDtype)
    )


def _can_be_missing(series: pd.Series) -> bool:
    """Whether the dtype (public schema, not the data) can hold a missing value."""
    return not (series.dtype.kind in "iub" and not isinstance(series.dtype, pd.api.extensions.ExtensionDtype))


def _numeric_column(name: str, series: pd.Series, bounds: tuple[float, float], bins: int) -> _Column:
    low, high = bounds
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    missing = np.isnan(values)
    clamped = np.clip(np.where(missing, low, values), low, high)
    codes = np.minimum(((clamped - low) / (high - low) * bins).astype(np.int64), bins - 1)
    has_missing = _can_be_missing(series)
    if has_missing:
        codes[missing] = bins
    return _Column(name, "numeric", codes, [], bins + has_missing, low, high, bins, has_missing)


def _text_codes(series: pd.Series) -> tuple[np.ndarray, dict[str, Any]]:
    """Each record's category text (missing as the missing label) and a value for each text (for the output)."""
    from privdash.data.fingerprint import category_text
    from privdash.measure.classes import MISSING_LABEL

    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    texts = [str(t) for t in category_text(pd.Index(uniques))]
    labels = np.append(np.asarray(texts, dtype=object), MISSING_LABEL)
    values: dict[str, Any] = dict(zip(texts, uniques, strict=True))
    values.setdefault(MISSING_LABEL, None)
    return labels[codes], values


def _categorical_column(name: str, series: pd.Series, keys: Sequence[Any]) -> _Column:
    from privdash.data.fingerprint import category_text

    texts, values = _text_codes(series)
    key_texts = [str(t) for t in category_text(pd.Index(list(keys), dtype=object))]
    unique_keys = list(dict.fromkeys(key_texts))
    codes = np.asarray(pd.Index(unique_keys).get_indexer(pd.Index(texts)), dtype=np.int64)
    labels = [values.get(t, keys[key_texts.index(t)]) for t in unique_keys]
    return _Column(name, "text", codes, labels, len(unique_keys))


def _measure(codes: np.ndarray, cells: int, epsilon: float, what: str, d_in: int = 1) -> np.ndarray:
    """The noisy histogram of ``codes`` over ``cells`` cells (discrete Laplace) by OpenDP, calibrated at ``d_in``
    rows per person (sensitivity ``d_in``)."""
    from privdash.dp import _opendp as dp

    transformation = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=dp.i64)),
        dp.symmetric_distance(),
        categories=list(range(cells)),
        null_category=False,
        MO=dp.L1Distance[dp.i64],
        TOA=dp.i64,
    )
    with out_of_range(what):
        calibrated = calibrate(transformation, Mechanism.GEOMETRIC, PrivacyBudget(epsilon), d_in=d_in)
        if calibrated.cost.epsilon > epsilon:
            raise OverflowError(f"OpenDP proves ε = {calibrated.cost.epsilon:g} above the allotment {epsilon:g}")
        return np.asarray(calibrated.measurement(codes), dtype=float)


def _noisy_max(scores: np.ndarray, epsilon: float, d_in: int = 1) -> int:
    """OpenDP's report-noisy-max of ``scores`` at loss ``epsilon``: one row moves each score by at most 1, in any
    direction, so ``d_in`` rows of one person move it by at most ``d_in``."""
    from privdash.dp import _opendp as dp

    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    scale = 2.0 * d_in / epsilon
    with out_of_range(f"the tree's selection at ε = {epsilon:g}"):
        measurement = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=scale)
        while float(measurement.map(float(d_in))) > epsilon:
            scale = math.nextafter(scale, math.inf)
            measurement = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=scale)
        return int(measurement([float(s) for s in scores]))


def _domains(
    table: pd.DataFrame,
    settings: SynthesisSettings,
    split: BudgetSplit,
    undeclared: list[str],
    people: pd.Series | None = None,
) -> dict[str, list[Any]]:
    """The categories of the text columns without a declared domain, by DP key selection (at c rows per person
    with ``people``: its threshold then keeps the chance that one person's values are released within δ)."""
    from privdash.dp.release import dp_histogram

    chosen: dict[str, list[Any]] = {}
    for name, budget in zip(undeclared, split.key_selection, strict=True):
        if people is None:
            release = dp_histogram(table, name, epsilon=budget.epsilon, delta=budget.delta)
        else:
            # A column name other than the table's own holds the person ids.
            person = "\x00person"
            frame = pd.DataFrame({name: table[name].to_numpy(), person: people.to_numpy()})
            release = dp_histogram(
                frame,
                name,
                epsilon=budget.epsilon,
                delta=budget.delta,
                entity=person,
                max_rows_per_person=settings.max_rows_per_person,
                seed=settings.seed,
            )
        if release.epsilon > budget.epsilon * (1 + 1e-12) or release.delta > budget.delta:
            raise ParameterError(f"DP key selection of {name} cannot stay within its allotment {budget}.")
        keys = release.table[name].tolist()
        if not keys:
            raise ParameterError(
                f"The budget is too small for the domain of '{name}': DP key selection at ε = {budget.epsilon:.4g}, "
                f"δ = {budget.delta:.3g} kept none of its values (a value needs about "
                f"{release.key_selection_threshold:,.0f} records to be kept). Give a larger epsilon or delta, or "
                f"declare the domain of '{name}'."
            )
        chosen[name] = keys
    return chosen


def _columns(table: pd.DataFrame, settings: SynthesisSettings) -> tuple[list[str], list[str]]:
    """(numeric columns, text columns without a declared domain); refuses dates and numbers without bounds."""
    bounds = dict(settings.bounds or {})
    domains = dict(settings.domains or {})
    unknown = sorted((set(bounds) | set(domains)) - {str(c) for c in table.columns})
    if unknown:
        raise ColumnError(f"Bounds or domains declared for column(s) not synthesized: {', '.join(unknown)}.")
    numeric: list[str] = []
    undeclared: list[str] = []
    unbounded: list[str] = []
    for name in table.columns:
        series = table[name]
        if pd.api.types.is_datetime64_any_dtype(series.dtype) or pd.api.types.is_timedelta64_dtype(series.dtype):
            raise ParameterError(
                f"Column '{name}' holds dates or durations, which DP synthesis does not model: leave it out "
                "(--columns) or convert it to numbers with declared bounds."
            )
        if _is_numeric(series) and name not in domains:
            (numeric if name in bounds else unbounded).append(str(name))
        elif not pd.api.types.is_bool_dtype(series.dtype) and name not in domains:
            undeclared.append(str(name))
    if unbounded:
        flags = ",".join(f"{n}=LOW:HIGH" for n in unbounded)
        raise ParameterError(
            f"DP synthesis needs declared bounds for the numeric column(s) {', '.join(unbounded)}: give "
            f"bounds {flags} (public knowledge, never taken from the data; --bounds on the command line), or leave "
            "them out of the modelled columns."
        )
    return numeric, undeclared


def _check_noise(columns: list[_Column], split: BudgetSplit, rows: int, d_in: int = 1) -> None:
    """Refuse before measuring when the noise of a 1-way marginal's cell (scale ``d_in`` / ε) exceeds the average
    count of a cell.

    The check reads the row count, seen only by the data holder who runs the synthesis; it releases nothing."""
    error = accuracy(Mechanism.GEOMETRIC, d_in / split.one_way)
    for column in columns:
        average = rows / max(column.cells, 1)
        if error > average:
            factor = error / max(average, 1e-9)
            raise ParameterError(
                f"The budget is too small for the domain of '{column.name}': its {column.cells} cells would get noise "
                f"up to ±{error:,.0f} (95%) while a cell holds about {average:,.1f} records on average. Give epsilon "
                f"about {factor:.1f} times larger, or fewer bins or categories."
            )


@uses_contrib
def mst_synthesize(
    table: pd.DataFrame,
    settings: SynthesisSettings,
    *,
    rng: np.random.Generator,
    progress: Progress | None = None,
    people: pd.Series | None = None,
) -> tuple[pd.DataFrame, PrivacyBudget, str]:
    """A DP synthetic table by MST (module docstring): (table, cost, one-line model).

    ``people``: the person id of each row of a table already truncated to at most ``settings.max_rows_per_person``
    (c) rows per person; every measurement is then calibrated at d_in = c."""
    d_in = 1 if people is None else int(settings.max_rows_per_person or 1)
    assert settings.epsilon is not None  # checked by SynthesisSettings
    if table.columns.duplicated().any():
        raise ParameterError("The table has duplicated column names: rename them before synthesizing.")
    if len(table.columns) == 0:
        raise ParameterError("A DP synthetic table needs at least one column.")
    numeric, undeclared = _columns(table, settings)
    split = budget_split(settings.epsilon, settings.delta, len(table.columns), len(undeclared))
    if len(table) == 0:
        raise ParameterError("The table has no records to synthesize from.")

    def report(fraction: float, text: str) -> None:
        if progress is not None:
            progress(fraction, text)

    report(0.0, "choosing the domains")
    declared = dict(settings.domains or {})
    declared.update(_domains(table, settings, split, undeclared, people))
    columns: list[_Column] = []
    for name in table.columns:
        series = table[name]
        if name in numeric:
            columns.append(_numeric_column(str(name), series, dict(settings.bounds or {})[name], settings.bins))
        elif pd.api.types.is_bool_dtype(series.dtype) and name not in declared:
            keys: list[Any] = [False, True] + ([None] if _can_be_missing(series) else [])
            codes = np.where(series.isna(), 2, series.fillna(False).astype(bool).astype(np.int64)).astype(np.int64)
            columns.append(_Column(str(name), "bool", codes, keys, len(keys)))
        else:
            columns.append(_categorical_column(str(name), series, list(declared[name])))
    _check_noise(columns, split, len(table), d_in)
    d = len(columns)
    # 1-way marginals
    one_way = []
    for index, column in enumerate(columns):
        report(0.1 + 0.3 * index / d, f"measuring the 1-way marginal of {column.name}")
        one_way.append(
            _measure(column.codes, column.cells, split.one_way, f"the 1-way marginal of {column.name}", d_in)
        )
    total = _noisy_total(columns, one_way)
    probabilities = [_normalized(np.clip(m, 0, None)) for m in one_way]
    # The tree: Kruskal with noisy max over the pairs not yet connected.
    edges: list[tuple[int, int]] = []
    if d > 1:
        component = list(range(d))
        pairs = [(a, b) for a in range(d) for b in range(a + 1, d)]
        scores = {}
        for a, b in pairs:
            cells = columns[a].cells * columns[b].cells
            if cells > MAX_PAIR_CELLS:
                raise ParameterError(
                    f"The 2-way domain of {columns[a].name} x {columns[b].name} has {cells:,} cells, above "
                    f"{MAX_PAIR_CELLS:,}: use fewer bins or categories, or leave a column out."
                )
            true = _pair_counts(columns[a], columns[b])
            expected = total * np.outer(probabilities[a], probabilities[b]).ravel()
            scores[(a, b)] = float(np.abs(true - expected).sum())
        for round_ in range(d - 1):
            report(0.4 + 0.3 * round_ / (d - 1), f"choosing the tree's edge {round_ + 1} of {d - 1}")
            candidates = [p for p in pairs if component[p[0]] != component[p[1]]]
            a, b = candidates[_noisy_max(np.array([scores[p] for p in candidates]), split.selection, d_in)]
            edges.append((a, b))
            old, new = component[b], component[a]
            component = [new if c == old else c for c in component]
    # 2-way marginals of the tree's edges
    two_way: dict[tuple[int, int], np.ndarray] = {}
    for index, (a, b) in enumerate(edges):
        report(0.7 + 0.2 * index / max(len(edges), 1), f"measuring {columns[a].name} x {columns[b].name}")
        valid = (columns[a].codes >= 0) & (columns[b].codes >= 0)
        codes = np.where(valid, columns[a].codes * columns[b].cells + columns[b].codes, -1)
        noisy = _measure(
            codes, columns[a].cells * columns[b].cells, split.two_way, f"{columns[a].name} x {columns[b].name}", d_in
        )
        two_way[(a, b)] = np.clip(noisy, 0, None).reshape(columns[a].cells, columns[b].cells)
    report(0.9, "sampling the records")
    rows = round(total)
    drawn = _sample(columns, probabilities, two_way, rows, rng)
    out = pd.DataFrame({c.name: _values(c, drawn[i], table[c.name], rng) for i, c in enumerate(columns)})
    report(1.0, "done")
    tree = ", ".join(f"{columns[a].name}-{columns[b].name}" for a, b in edges) or "(one column)"
    model = (
        f"MST (McKenna et al. 2021) on OpenDP, {rows} records sampled along the tree {tree}; budget: "
        f"{split.describe()}; total ε {settings.epsilon:g}, δ {settings.delta:g}"
    )
    return out, PrivacyBudget(settings.epsilon, settings.delta), model


def _noisy_total(columns: list[_Column], one_way: list[np.ndarray]) -> float:
    """The number of records, from the noisy 1-way marginals (post-processing): the inverse-variance weighted mean
    of the totals of the columns that count every record (numeric and boolean ones; the noise variance of a total
    grows with its cells), else the largest total (a text column counts only the records of its domain)."""
    complete = [i for i, c in enumerate(columns) if c.kind in ("numeric", "bool")]
    if complete:
        weights = np.array([1.0 / columns[i].cells for i in complete])
        totals = np.array([one_way[i].sum() for i in complete])
        return max(float(np.sum(weights * totals) / weights.sum()), 1.0)
    return max(float(max(m.sum() for m in one_way)), 1.0)


def _normalized(counts: np.ndarray) -> np.ndarray:
    total = counts.sum()
    if total <= 0:
        return np.full(len(counts), 1.0 / len(counts))
    return counts / total


def _pair_counts(a: _Column, b: _Column) -> np.ndarray:
    valid = (a.codes >= 0) & (b.codes >= 0)
    return np.bincount(a.codes[valid] * b.cells + b.codes[valid], minlength=a.cells * b.cells).astype(float)


def _sample(
    columns: list[_Column],
    probabilities: list[np.ndarray],
    two_way: Mapping[tuple[int, int], np.ndarray],
    rows: int,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    """Cell codes of ``rows`` records drawn along the tree from the clipped noisy conditionals."""
    d = len(columns)
    neighbours: dict[int, list[tuple[int, np.ndarray]]] = {i: [] for i in range(d)}
    for (a, b), table in two_way.items():
        neighbours[a].append((b, table))  # P(b | a): the rows of the a x b table
        neighbours[b].append((a, table.T))
    drawn: list[np.ndarray | None] = [None] * d
    for root in range(d):
        if drawn[root] is not None:
            continue
        drawn[root] = _draw(np.tile(probabilities[root], (1, 1)), np.zeros(rows, dtype=np.int64), rng)
        queue = [root]
        while queue:
            parent = queue.pop(0)
            for child, table in neighbours[parent]:
                if drawn[child] is not None:
                    continue
                sums = table.sum(axis=1, keepdims=True)
                conditional = np.where(sums > 0, table / np.where(sums > 0, sums, 1), probabilities[child][None, :])
                parent_codes = drawn[parent]
                assert parent_codes is not None
                drawn[child] = _draw(conditional, parent_codes, rng)
                queue.append(child)
    return [c if c is not None else np.zeros(rows, dtype=np.int64) for c in drawn]


def _draw(conditional: np.ndarray, given: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each record, a cell drawn from row ``given`` of ``conditional`` (rows sum to 1): one search in the
    cumulative rows laid end to end (row r spans [r, r + 1))."""
    cells = conditional.shape[1]
    cumulative = np.cumsum(conditional, axis=1)
    cumulative /= cumulative[:, -1:]
    flat = (cumulative + np.arange(conditional.shape[0])[:, None]).ravel()
    positions = np.searchsorted(flat, given + rng.random(len(given)), side="right")
    return np.minimum(positions - given * cells, cells - 1)


def _values(column: _Column, codes: np.ndarray, original: pd.Series, rng: np.random.Generator) -> pd.Series:
    """The values of the drawn cells in the original column's dtype (a number uniform inside its bin)."""
    if column.kind == "numeric":
        width = (column.high - column.low) / column.bins
        values = column.low + (np.minimum(codes, column.bins - 1) + rng.random(len(codes))) * width
        values = np.clip(values, column.low, column.high)
        if pd.api.types.is_integer_dtype(original.dtype):
            values = np.round(values)
        if column.missing_cell:
            values = np.where(codes == column.bins, np.nan, values)
        return _cast(pd.Series(values), original.dtype)
    labels = np.asarray([*column.labels, None], dtype=object)
    return _cast(pd.Series(labels[np.where(codes >= 0, codes, len(column.labels))], dtype=object), original.dtype)


def _cast(values: pd.Series, dtype: Any) -> pd.Series:
    try:
        return values.astype(dtype)
    except (TypeError, ValueError):
        return values
