"""Applying a mapping to data: :func:`recode_postcodes`, registered as the recipe step ``postcode_recode``
(see :mod:`privdash.geo.postcodes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import (
    ParameterError,
    check_columns,
    format_values,
)
from privdash.geo.postcodes.parse import parse_postcodes, parse_zip_codes
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = ["recode_postcodes"]


def _plain_mapping(mapping: pd.Series | Mapping[str, str]) -> dict[str, str]:
    items = mapping.items()
    return {str(k): str(v) for k, v in items}


_HANDLING = ("suppress", "error")


def recode_postcodes(
    data: pd.DataFrame,
    /,
    *,
    column: str,
    mapping: Mapping[str, str] | pd.Series,
    country: str = "uk",
    invalid: str = "suppress",
    unmapped: str = "suppress",
) -> TransformResult:
    """Replace the postcodes of ``data[column]`` by their published codes.

    Each value is parsed (:func:`parse_postcodes`, :func:`parse_zip_codes`) and taken to the mapping's source
    level first: a UK unit or sector to its district, a US ZIP code to its first three digits. A UK *area* value
    maps to the published code shared by all the area's districts in the mapping, and counts as unmapped when they
    do not share one (it cannot be placed without guessing).

    Parameters
    ----------
    data
        The table; not modified.
    column
        The postcode column.
    mapping
        Source code -> published code (:attr:`PostcodeGeneralization.mapping`, or a saved recipe's dict).
    country
        ``uk`` (keys are districts) or ``us`` (keys are ZIP3).
    invalid
        What to do with values that are not postcodes: ``suppress`` (published as missing, counted and listed in
        the summary) or ``error`` (:class:`ParameterError` naming them).
    unmapped
        Valid postcodes whose district / ZIP3 is not in the mapping (e.g. Scottish postcodes with an England and
        Wales table): ``suppress`` or ``error``.

    Returns
    -------
    TransformResult
        ``data`` with the column replaced (text, missing where suppressed); ``summary`` with ``rows``,
        ``missing`` (missing before), ``invalid``, ``unmapped``, ``suppressed`` (rows made missing), ``changed``
        (cells whose value changed, suppressions included), ``levels`` (rows per parsed level), examples of invalid
        and unmapped values, and ``published_units`` (distinct published codes present); ``mapping`` lists each
        distinct original value with its published code.
    """
    check_columns(data, [column], role="postcode column")
    if country not in ("uk", "us"):
        raise ParameterError(f"country must be 'uk' or 'us', got {country!r}.")
    for name, value in (("invalid", invalid), ("unmapped", unmapped)):
        if value not in _HANDLING:
            raise ParameterError(f"{name} must be one of {', '.join(_HANDLING)}, got {value!r}.")
    if not isinstance(mapping, Mapping | pd.Series) or not len(mapping):
        raise ParameterError("The postcode mapping must be a non-empty object of source code -> published code.")
    lookup = _plain_mapping(mapping)
    values = data[column]
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    unique_index = pd.Index(uniques)
    if country == "uk":
        parsed = parse_postcodes(pd.Series(unique_index, dtype=object))
        published = parsed["district"].astype(object).map(lookup).astype(object)
        is_area = parsed["level"].eq("area").to_numpy()
        if is_area.any():
            by_area = parsed.loc[is_area, "area"].astype(object).map(_area_lookup(lookup))
            published[is_area] = by_area.to_numpy(dtype=object)
    else:
        parsed = parse_zip_codes(pd.Series(uniques))
        published = parsed["zip3"].astype(object).map(lookup).astype(object)
    level = parsed["level"].astype(str).to_numpy()
    bad = level == "invalid"
    not_found = ~bad & published.isna().to_numpy()
    raw = unique_index.astype(str)
    row_counts = np.bincount(codes[codes >= 0], minlength=len(unique_index))
    if invalid == "error" and bad.any():
        raise ParameterError(
            f"Column '{column}' holds {int(row_counts[bad].sum())} values that are not valid "
            f"{'UK postcodes' if country == 'uk' else 'US ZIP codes'}: {format_values(raw[bad].tolist())}."
        )
    if unmapped == "error" and not_found.any():
        raise ParameterError(
            f"Column '{column}' holds {int(row_counts[not_found].sum())} postcodes outside the mapping: "
            f"{format_values(raw[not_found].tolist())}."
        )
    published_values = published.to_numpy(dtype=object)
    padded = np.concatenate([published_values, np.array([None], dtype=object)])
    output = pd.Series(
        pd.array(padded[np.where(codes < 0, len(published_values), codes)], dtype="str"),
        index=values.index,
        name=column,
    )
    out = data.copy()
    out[column] = output
    original_text = values.astype("str").where(values.notna(), None)
    changed = int((original_text.fillna("\0") != output.fillna("\0")).sum())
    level_counts = pd.Series(row_counts, index=level).groupby(level=0).sum()
    summary = {
        "column": column,
        "country": country,
        "rows": len(data),
        "missing": int((codes < 0).sum()),
        "invalid": int(row_counts[bad].sum()),
        "invalid_values": raw[bad].tolist()[:10],
        "unmapped": int(row_counts[not_found].sum()),
        "unmapped_values": raw[not_found].tolist()[:10],
        "suppressed": int(row_counts[bad | not_found].sum()),
        "changed": changed,
        "levels": {str(k): int(v) for k, v in level_counts.items() if v},
        "published_units": int(output.nunique()),
    }
    value_map = pd.DataFrame({"column": column, "original": raw, "published": pd.array(published_values, dtype="str")})
    step = Step(
        "postcode_recoding",
        {"column": column, "mapping": lookup, "country": country, "invalid": invalid, "unmapped": unmapped},
    )
    return TransformResult(data=out, step=step, summary=summary, mapping=value_map)


@register_step("postcode_recoding")
def _postcode_recode_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    """The ``postcode_recode`` recipe step: :func:`recode_postcodes` with JSON parameters."""
    return recode_postcodes(data, **params)


def _area_lookup(lookup: Mapping[str, str]) -> dict[str, str]:
    """Area -> published code, for areas whose districts all share one published code."""
    table = pd.DataFrame({"district": list(lookup), "published": list(lookup.values())})
    table["area"] = table["district"].str.extract(r"^([A-Z]+)", expand=False)
    shared = table.groupby("area")["published"].agg(["nunique", "first"])
    single = shared.loc[shared["nunique"] == 1, "first"]
    return {str(area): str(code) for area, code in zip(single.index, single, strict=True)}
