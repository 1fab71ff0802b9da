"""Which original values a released value covers, and which released records match a set of known values.

The attacker knows how the release was made (Kerckhoffs' principle), so a released value *covers* every original
value it may stand for. Per column, the rules below are applied to the distinct released values against the
distinct original values (the *domain*: the values of the original table and of the control set):

* **wildcards**: a missing released value (cell suppression) and ``*`` (the top of every hierarchy) cover every
  value, missing ones included;
* **equal value**: the same value, as the risk models compare values within a table: text exactly as written
  (``' Bath'``, ``'Bath '`` and ``'Bath'`` are three values, as they are three classes), other values by their
  canonical text (:func:`~privdash.transform.hierarchy.canonical_text`: the number ``39`` matches the text
  ``"39"`` and ``39.0``, since a released column of labels is read as text);
* **hierarchy labels**: with a hierarchy for the column (ARX CSV or a recipe's ``generalize`` step), a label at
  any level covers the leaves below it (``North America``, ``Married``);
* **numbers** (a domain of numbers only): a released number covers the *nearest* domain number(s), which is exact
  matching for an unchanged value and nearest-value matching for a perturbed or synthetic one; interval labels
  cover the numbers inside them (``20-39`` inclusive, ``[20, 40)``, ``<20``, ``>=65``, ``>= 65``, ``<= 18``);
  with a recipe's top/bottom coding, the published top ``t`` covers every number ``>= t`` (bottom: ``<= b``);
* **masks**: a label with one run of ``*`` (``123**``, ``ab***yz``) covers the values of the same length that
  agree on the characters shown (masking hierarchies, masked identifiers);
* **dates**: ``2024-03``, ``2024-Q1`` and ``2024`` cover the dates in that month, quarter or year;
* **postcodes**: a UK sector, district or area covers the postcodes inside it;
* **rare categories**: ``Other`` (the rare-category label) covers every domain value not published as such.

A released value that none of the rules connects to the domain covers nothing: it is *unmatched* (a label whose
hierarchy the attacker was not given, or a synthetic category unseen in the original). An attack reading such a
column cannot be measured unless the caller says those values stand for no one (see
:func:`~privdash.attack.setup.prepare`). A column the recipe pseudonymizes (keyed HMAC pseudonyms) is read as
wildcards: without the key, a pseudonym may stand for any original value.

Released values with the same coverage are merged into one *group*, so a perturbed column whose released values
round to the same original value behaves like that value. Records are then matched on distinct
value combinations, column by column, keeping only the prefixes that some released record has: no loop over rows.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privdash.transform.hierarchy import TOP, Hierarchy, canonical_text

__all__ = ["ColumnCoverage", "ReleasedIndex", "column_coverage", "match_text", "numbers", "ranges"]

#: Numbers inside interval labels (optional sign and decimals).
_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_INCLUSIVE = re.compile(rf"^\s*({_NUMBER})\s*-\s*({_NUMBER})\s*$")
_HALF_OPEN = re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)\s*$")
_BOUND = re.compile(rf"^\s*(<=|>=|<|>)\s*({_NUMBER})\s*$")
_MASK = re.compile(r"^([^*]*)(\*+)([^*]*)$")
_DATE = re.compile(r"^\d{4}(?:-\d{2}|-Q[1-4])?$")
#: The label :func:`~privdash.transform.hierarchy.rare_category_hierarchy` gives rare values by default.
RARE_LABEL = "Other"


@dataclass(frozen=True, eq=False)
class ColumnCoverage:
    """The coverage of one column: released values grouped by the domain values they cover.

    Attributes
    ----------
    name
        The column.
    domain
        The distinct non-missing original values; domain code ``len(domain)`` stands for a missing value.
    group_of_released
        Per distinct released value (and a last entry for a missing released value): its group.
    indptr, groups
        Compressed rows: the groups covering domain code ``d`` are ``groups[indptr[d]:indptr[d + 1]]``.
    group_size
        Per group, the number of domain codes it covers.
    group_value
        Per group covering exactly one domain code: that code (else -1).
    rules
        Per matching rule, the number of distinct released values it connected to the domain (``unmatched``: those
        no rule connected).
    unmatched_values
        The first few unmatched released values, as text (for messages).
    """

    name: str
    domain: pd.Index
    group_of_released: np.ndarray
    indptr: np.ndarray
    groups: np.ndarray
    group_size: np.ndarray
    group_value: np.ndarray
    rules: Mapping[str, int]
    unmatched_values: tuple[str, ...] = ()

    @property
    def n_groups(self) -> int:
        return len(self.group_size)

    @property
    def unmatched(self) -> int:
        """The number of distinct released values that cover no original value."""
        return int(self.rules.get("unmatched", 0))


def match_text(values: pd.Index) -> np.ndarray:
    """The text each value is matched by: text exactly as written (surrounding spaces kept, as the risk models keep
    them), any other value by its canonical text (whole numbers without decimals, midnight dates as days)."""
    array = np.asarray(values, dtype=object)
    out = np.empty(len(array), dtype=object)
    is_text = np.fromiter((isinstance(v, str) for v in array), dtype=bool, count=len(array))
    out[is_text] = array[is_text]
    if not is_text.all():
        out[~is_text] = np.asarray(canonical_text(pd.Index(array[~is_text], dtype=object)), dtype=object)
    return out


def numbers(values: pd.Index) -> np.ndarray:
    """Each value as a float (NaN when it is not a number)."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64)
    text = pd.Series(np.asarray(values, dtype=object), dtype=object)
    text = text.where(text.map(lambda v: isinstance(v, str | int | float | np.number) and not isinstance(v, bool)))
    return pd.to_numeric(text.astype(str).str.strip(), errors="coerce").to_numpy(dtype=np.float64)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + c)`` for each start and count (vectorized)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets, counts) + np.arange(total, dtype=np.int64)


def _only(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` as objects, None where ``mask`` is False (so the value joins nothing)."""
    out = np.asarray(values, dtype=object).copy()
    out[~np.asarray(mask, dtype=bool)] = None
    return out


def _join(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(i, j)`` with ``left[i] == right[j]`` (text keys; None never matches)."""
    a = pd.DataFrame({"key": left, "i": np.arange(len(left))}).dropna()
    b = pd.DataFrame({"key": right, "j": np.arange(len(right))}).dropna()
    if not len(a) or not len(b):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    merged = a.merge(b, on="key", how="inner")
    return merged["i"].to_numpy(dtype=np.int64), merged["j"].to_numpy(dtype=np.int64)


def _interval_bounds(text: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per label: low, high, low inclusive, high inclusive (NaN bounds when the label is no interval)."""
    series = pd.Series(text, dtype=object).astype(str)
    low = np.full(len(text), np.nan)
    high = np.full(len(text), np.nan)
    low_in = np.ones(len(text), dtype=bool)
    high_in = np.ones(len(text), dtype=bool)
    inclusive = series.str.extract(_INCLUSIVE).astype(float).to_numpy()
    hit = ~np.isnan(inclusive[:, 0])
    low[hit], high[hit] = inclusive[hit, 0], inclusive[hit, 1]
    half = series.str.extract(_HALF_OPEN).astype(float).to_numpy()
    hit = ~np.isnan(half[:, 0])
    low[hit], high[hit], high_in[hit] = half[hit, 0], half[hit, 1], False
    bound = series.str.extract(_BOUND)
    value = bound[1].astype(float).to_numpy()
    operator = bound[0].to_numpy(dtype=object)
    for symbol, is_low, included in (("<=", False, True), ("<", False, False), (">=", True, True), (">", True, False)):
        hit = operator == symbol
        if is_low:
            low[hit], high[hit], low_in[hit] = value[hit], np.inf, included
        else:
            low[hit], high[hit], high_in[hit] = -np.inf, value[hit], included
    return low, high, low_in, high_in


def _interval_pairs(
    low: np.ndarray, high: np.ndarray, low_in: np.ndarray, high_in: np.ndarray, domain_numbers: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (label, domain code) for every domain number inside each label's interval."""
    labels = np.flatnonzero(~np.isnan(low) & ~np.isnan(high))
    order = np.argsort(domain_numbers, kind="stable")
    ordered = domain_numbers[order]
    lo, hi = low[labels], high[labels]
    start = np.where(
        low_in[labels], np.searchsorted(ordered, lo, side="left"), np.searchsorted(ordered, lo, side="right")
    )
    end = np.where(
        high_in[labels], np.searchsorted(ordered, hi, side="right"), np.searchsorted(ordered, hi, side="left")
    )
    count = np.maximum(end - start, 0)
    return np.repeat(labels, count), order[ranges(start, count)]


def _nearest_pairs(released_numbers: np.ndarray, domain_numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (released, domain code) linking each released number to the nearest domain number(s) (ties: both)."""
    labels = np.flatnonzero(np.isfinite(released_numbers))
    if not len(labels) or not len(domain_numbers):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(domain_numbers, kind="stable")
    ordered = domain_numbers[order]
    x = released_numbers[labels]
    position = np.searchsorted(ordered, x)
    left = np.clip(position - 1, 0, len(ordered) - 1)
    right = np.clip(position, 0, len(ordered) - 1)
    to_left, to_right = np.abs(x - ordered[left]), np.abs(ordered[right] - x)
    best = np.minimum(to_left, to_right)
    take_left, take_right = to_left == best, (to_right == best) & (right != left)
    return (
        np.concatenate([labels[take_left], labels[take_right]]),
        order[np.concatenate([left[take_left], right[take_right]])],
    )


def _mask_pairs(released_text: np.ndarray, domain_text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs for labels with one run of ``*``: same length, same characters outside the run."""
    parts = pd.Series(released_text, dtype=object).astype(str).str.extract(_MASK)
    labels = np.flatnonzero(parts[1].notna().to_numpy() & (released_text != TOP))
    if not len(labels):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    head = parts[0].to_numpy(dtype=object)[labels].astype(str)
    stars = parts[1].to_numpy(dtype=object)[labels].astype(str)
    tail = parts[2].to_numpy(dtype=object)[labels].astype(str)
    length = np.char.str_len(head) + np.char.str_len(stars) + np.char.str_len(tail)
    start = np.char.str_len(head)
    stop = start + np.char.str_len(stars)
    shapes, shape_of = np.unique(np.column_stack([length, start, stop]), axis=0, return_inverse=True)
    shape_of = shape_of.reshape(-1)
    keys = np.char.add(np.char.add(head, "\x00"), tail).astype(object)
    domain = pd.Series(domain_text, dtype=object).astype(str)
    domain_length = domain.str.len().to_numpy()
    out_r, out_d = [], []
    # One pass per distinct mask shape (length and position of the run), never per value.
    for shape, (size, a, b) in enumerate(shapes.tolist()):
        rows = np.flatnonzero(shape_of == shape)
        candidates = np.flatnonzero(domain_length == size)
        if not len(candidates):
            continue
        chosen = domain.iloc[candidates]
        first = np.asarray(chosen.str.slice(0, a), dtype=str)
        last = np.asarray(chosen.str.slice(b), dtype=str)
        i, j = _join(keys[rows], np.char.add(np.char.add(first, "\x00"), last).astype(object))
        out_r.append(labels[rows][i])
        out_d.append(candidates[j])
    if not out_r:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(out_r), np.concatenate(out_d)


def _date_pairs(released_text: np.ndarray, domain: pd.Index, todo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs for month / quarter / year labels against a domain of dates."""
    empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    candidates = todo & pd.Series(released_text, dtype=object).astype(str).str.match(_DATE).to_numpy()
    if not candidates.any() or not len(domain):
        return empty
    if pd.api.types.is_datetime64_any_dtype(domain.dtype):
        stamps = pd.DatetimeIndex(domain)
    else:
        if pd.api.types.is_numeric_dtype(domain.dtype):
            return empty
        stamps = pd.DatetimeIndex(
            pd.to_datetime(pd.Series(np.asarray(domain, dtype=object)).astype(str), errors="coerce", format="mixed")
        )
    ok = np.flatnonzero(~np.asarray(stamps.isna(), dtype=bool))
    if not len(ok):
        return empty
    stamps = stamps[ok]
    year = pd.Series(stamps.year, dtype="int64").astype(str).str.zfill(4)
    month = year + "-" + pd.Series(stamps.month, dtype="int64").astype(str).str.zfill(2)
    quarter = year + "-Q" + pd.Series(stamps.quarter, dtype="int64").astype(str)
    keys = _only(candidates, released_text)
    out = [_join(keys, derived.to_numpy(dtype=object)) for derived in (year, month, quarter)]
    return np.concatenate([r for r, _ in out]), ok[np.concatenate([d for _, d in out])]


def _postcode_pairs(released_text: np.ndarray, domain_text: np.ndarray, todo: np.ndarray) -> tuple[np.ndarray, ...]:
    """Pairs for UK sector / district / area labels against a domain of full postcodes."""
    from privdash.geo.postcodes import parse_postcodes

    empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if not todo.any() or not len(domain_text):
        return empty
    parsed = parse_postcodes(pd.Series(domain_text, dtype=object))
    units = np.flatnonzero((parsed["level"].astype(str) == "unit").to_numpy())
    if not len(units):
        return empty
    wanted = parse_postcodes(pd.Series(_only(todo, released_text)))
    keys = _only(todo, wanted["postcode"].to_numpy(dtype=object))
    out = [_join(keys, parsed[level].to_numpy(dtype=object)[units]) for level in ("sector", "district", "area")]
    return np.concatenate([r for r, _ in out]), units[np.concatenate([d for _, d in out])]


def column_coverage(
    name: str,
    domain_values: Sequence[pd.Series],
    released: pd.Series,
    *,
    hierarchy: Hierarchy | None = None,
    top_bottom: tuple[float | None, float | None] | None = None,
    wildcard: bool = False,
) -> tuple[ColumnCoverage, list[np.ndarray], np.ndarray]:
    """The coverage of one column, the domain code of every value of ``domain_values`` and the group of every
    released value (see the module docstring for the rules; with ``wildcard``, every released value covers every
    original value, as a pseudonym does for an attacker without the key).

    Returns ``(coverage, codes, released_groups)``: ``codes[i]`` holds, per row of ``domain_values[i]``, its
    domain code (``len(coverage.domain)`` for a missing value); ``released_groups`` holds, per released row, its
    group.
    """
    joined = pd.concat([s.reset_index(drop=True) for s in domain_values], ignore_index=True)
    domain_codes, domain = pd.factorize(joined, use_na_sentinel=True)
    n_d = len(domain)
    domain_codes = np.where(domain_codes < 0, n_d, domain_codes).astype(np.int64)
    bounds = np.cumsum([0] + [len(s) for s in domain_values])
    codes = [domain_codes[a:b] for a, b in itertools.pairwise(bounds)]
    released_codes, released_values = pd.factorize(released.reset_index(drop=True), use_na_sentinel=True)
    n_r = len(released_values)
    released_codes = np.where(released_codes < 0, n_r, released_codes).astype(np.int64)

    text_r = match_text(pd.Index(released_values, dtype=object))
    text_d = match_text(pd.Index(domain, dtype=object))
    universal = np.append((text_r == TOP) | wildcard, True)  # the last entry: a missing released value
    found_r: list[np.ndarray] = []
    found_d: list[np.ndarray] = []
    rules: dict[str, int] = {"wildcard": int(universal[:-1].sum()) + int((released_codes == n_r).any())}

    def add(rule: str, pairs: tuple[np.ndarray, ...]) -> None:
        r, d = pairs
        found_r.append(np.asarray(r, dtype=np.int64))
        found_d.append(np.asarray(d, dtype=np.int64))
        rules[rule] = len(np.unique(r))

    add("equal", _join(text_r, text_d))
    if hierarchy is not None and n_d:
        leaf = hierarchy.codes_for(pd.Series(np.asarray(domain, dtype=object), dtype=object), 0, strict=False)
        known = np.flatnonzero(leaf >= 0)
        level_r, level_d = [], []
        for level in range(1, hierarchy.n_levels):
            labels = match_text(pd.Index(hierarchy.labels[level], dtype=object))
            r, d = _join(text_r, labels[hierarchy.codes[level][leaf[known]]])
            level_r.append(r)
            level_d.append(known[d])
        if level_r:
            add("hierarchy", (np.concatenate(level_r), np.concatenate(level_d)))

    def todo() -> np.ndarray:
        # The later rules read only the values that no earlier rule explained: a hierarchy is authoritative
        # (ARX's Adult hierarchy files 40 under "20-39", which read as an interval would not contain it).
        matched = universal[:-1].copy()
        matched[np.concatenate(found_r)] = True
        return ~matched

    domain_numbers = numbers(pd.Index(domain, dtype=object)) if n_d else np.zeros(0)
    if n_d and np.isfinite(domain_numbers).all():
        released_numbers = numbers(pd.Index(released_values, dtype=object)).copy()
        low, high, low_in, high_in = _interval_bounds(text_r)
        coded = np.zeros(n_r, dtype=bool)
        if top_bottom is not None:
            bottom, top = top_bottom
            if top is not None:
                coded |= released_numbers == top
                low[released_numbers == top], high[released_numbers == top] = top, np.inf
                low_in[released_numbers == top] = True
            if bottom is not None:
                coded |= released_numbers == bottom
                low[released_numbers == bottom], high[released_numbers == bottom] = -np.inf, bottom
                high_in[released_numbers == bottom] = True
        released_numbers[coded] = np.nan  # a top or bottom code stands for its whole range
        add("nearest number", _nearest_pairs(np.where(todo(), released_numbers, np.nan), domain_numbers))
        waiting = todo() | coded
        low[~waiting], high[~waiting] = np.nan, np.nan
        add("interval", _interval_pairs(low, high, low_in, high_in, domain_numbers))
    if n_d:
        add("mask", _mask_pairs(_only(todo(), text_r), text_d))
    if n_d and not np.isfinite(domain_numbers).all():
        add("date", _date_pairs(text_r, pd.Index(domain), todo()))
        add("postcode", _postcode_pairs(text_r, text_d, todo()))
    if n_d and hierarchy is None:
        other = np.flatnonzero((text_r == RARE_LABEL) & todo())
        if len(other):
            rest = np.flatnonzero(~np.isin(text_d, text_r))
            add("rare category", (np.repeat(other, len(rest)), np.tile(rest, len(other))))
    rules = {rule: count for rule, count in rules.items() if count}
    left = todo()
    rules["unmatched"] = int(left.sum())
    coverage = _group(name, domain, n_r, universal, np.concatenate(found_r), np.concatenate(found_d), rules)
    examples = tuple(str(text) for text in text_r[left][:5])
    coverage = dataclasses.replace(coverage, unmatched_values=examples)
    return coverage, codes, coverage.group_of_released[released_codes]


def _group(
    name: str,
    domain: pd.Index,
    n_r: int,
    universal: np.ndarray,
    pair_r: np.ndarray,
    pair_d: np.ndarray,
    rules: dict[str, int],
) -> ColumnCoverage:
    """Merge released values with the same coverage into groups and index the groups by domain code."""
    n_d = len(domain)
    width = n_d + 1
    keys = np.unique(pair_r * width + pair_d)
    pair_r, pair_d = keys // width, keys % width
    # A released value covering every non-missing domain value is treated as a wildcard.
    per_value = np.bincount(pair_r, minlength=n_r + 1)
    universal = universal | (per_value >= n_d) & (n_d > 0)
    keep = ~universal[pair_r]
    pair_r, pair_d = pair_r[keep], pair_d[keep]
    # Set fingerprint per released value: two independent 64-bit sums of random hashes of its domain codes.
    rng = np.random.default_rng(20230101)
    hashes = rng.integers(0, 2**63, size=(2, width), dtype=np.int64).astype(np.uint64)
    starts = np.flatnonzero(np.r_[True, pair_r[1:] != pair_r[:-1]]) if len(pair_r) else np.zeros(0, dtype=np.int64)
    signature = np.zeros((n_r + 1, 3), dtype=np.uint64)
    if len(pair_r):
        owners = pair_r[starts]
        with np.errstate(over="ignore"):
            for row in range(2):
                signature[owners, row] = np.add.reduceat(hashes[row][pair_d], starts)
        signature[owners, 2] = np.diff(np.r_[starts, len(pair_r)]).astype(np.uint64)
    signature[universal] = np.uint64(2**64 - 1)
    _, group_of_released = np.unique(signature, axis=0, return_inverse=True)
    group_of_released = group_of_released.reshape(-1).astype(np.int64)
    n_groups = int(group_of_released.max()) + 1
    group_pairs = np.unique(group_of_released[pair_r] * width + pair_d)
    wildcard_groups = np.unique(group_of_released[universal])
    all_codes = np.arange(width, dtype=np.int64)
    g = np.concatenate([group_pairs // width, np.repeat(wildcard_groups, width)])
    d = np.concatenate([group_pairs % width, np.tile(all_codes, len(wildcard_groups))])
    order = np.lexsort((g, d))
    g, d = g[order], d[order]
    indptr = np.searchsorted(d, np.arange(width + 1)).astype(np.int64)
    group_size = np.bincount(g, minlength=n_groups).astype(np.int64)
    group_value = np.full(n_groups, -1, dtype=np.int64)
    single = group_size[g] == 1
    group_value[g[single]] = d[single]
    group_value[np.isin(np.arange(n_groups), wildcard_groups)] = -1
    return ColumnCoverage(name, domain, group_of_released, indptr, g, group_size, group_value, rules)


@dataclass(frozen=True, eq=False)
class ReleasedIndex:
    """The released records over some columns, ready to be matched against known original values.

    ``combo_of_row`` gives each released record its distinct combination of groups, ``counts`` the records per
    combination; ``prefix_keys[c]`` are the sorted keys of the distinct prefixes over the first ``c + 1``
    columns (a prefix id times the column's group count plus the group).
    """

    coverages: tuple[ColumnCoverage, ...]
    combo_of_row: np.ndarray
    counts: np.ndarray
    prefix_keys: tuple[np.ndarray, ...]
    combo_of_prefix: np.ndarray

    @classmethod
    def build(cls, coverages: Sequence[ColumnCoverage], groups: np.ndarray) -> ReleasedIndex:
        """Index released records given their group per column (``groups``: records x columns)."""
        combos, combo_of_row = np.unique(groups, axis=0, return_inverse=True)
        combo_of_row = combo_of_row.reshape(-1).astype(np.int64)
        prefix = np.zeros(len(combos), dtype=np.int64)
        keys = []
        for column, coverage in enumerate(coverages):
            key = prefix * coverage.n_groups + combos[:, column]
            unique, prefix = np.unique(key, return_inverse=True)
            prefix = prefix.reshape(-1).astype(np.int64)
            keys.append(unique)
        combo_of_prefix = np.empty(len(combos), dtype=np.int64)
        combo_of_prefix[prefix] = np.arange(len(combos))
        counts = np.bincount(combo_of_row, minlength=len(combos)).astype(np.int64)
        return cls(tuple(coverages), combo_of_row, counts, tuple(keys), combo_of_prefix)

    @property
    def n_combos(self) -> int:
        return len(self.counts)

    def pairs(self, known: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (query, released combination) where the combination covers the query's known values.

        ``known`` holds domain codes, one row per query and one column per indexed column.
        """
        rows = np.arange(len(known), dtype=np.int64)
        prefix = np.zeros(len(known), dtype=np.int64)
        for column, coverage in enumerate(self.coverages):
            codes = known[rows, column]
            start = coverage.indptr[codes]
            count = coverage.indptr[codes + 1] - start
            rows, prefix = np.repeat(rows, count), np.repeat(prefix, count)
            key = prefix * coverage.n_groups + coverage.groups[ranges(start, count)]
            sorted_keys = self.prefix_keys[column]
            position = np.minimum(np.searchsorted(sorted_keys, key), max(len(sorted_keys) - 1, 0))
            hit = sorted_keys[position] == key if len(sorted_keys) else np.zeros(len(key), dtype=bool)
            rows, prefix = rows[hit], position[hit]
        return rows, self.combo_of_prefix[prefix]

    def match_counts(self, known: np.ndarray) -> np.ndarray:
        """Per query, the number of released records covering its known values."""
        rows, combos = self.pairs(known)
        return np.bincount(rows, weights=self.counts[combos], minlength=len(known)).astype(np.int64)
