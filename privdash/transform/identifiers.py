"""Direct identifiers: drop them, mask them, or replace them by keyed pseudonyms.

Drop
    The columns are removed.
Mask
    Every character except the first ``keep_first`` and the last ``keep_last`` becomes ``mask_char``; the length
    is kept. A value with no more than ``keep_first + keep_last`` characters is masked completely, so masking never
    publishes a whole value. Values are masked as text (``str(value)``; whole numbers in a float column without
    ``.0``).
Pseudonymise (keyed HMAC-SHA256)
    Each value becomes ``HMAC-SHA256(key, str(value) as UTF-8)`` in lower-case hex, cut to ``length`` characters
    (default 16 = 64 bits; at one million distinct values the chance that two share a pseudonym is about 3e-8).
    The same key gives the same pseudonym in every run and every column, so pseudonymised tables can still be
    joined; a different key gives unrelated pseudonyms; without the key the mapping cannot be recomputed (unlike a
    plain hash, which anyone can recompute for every likely value). The key is always an argument (the command
    line and the dashboard read it from the environment variable ``PRIVDASH_PSEUDONYM_KEY`` through their
    settings); there is no default key, and keys shorter than 16 bytes are refused. The key is never recorded: the
    step records the variable it is configured in and a fingerprint (``HMAC-SHA256(key, "privdash key
    fingerprint")``, first 16 hex characters), and a recorded fingerprint is checked when the step is applied again
    (the key is a *secret* of the step: ``apply_recipe(data, recipe, secrets={"key": key})`` hands it over); the
    summary of a step re-applied that way warns that its output can be joined with the earlier release on the
    pseudonyms. If two distinct values would share a pseudonym the step fails and asks for a longer one.

Missing values stay missing in every method. No value mapping is returned: a table from identifiers to
pseudonyms or masks would itself re-identify people.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import ParameterError, check_columns, check_positive_int
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = [
    "KEY_ENV",
    "drop_identifiers",
    "key_fingerprint",
    "mask_identifiers",
    "pseudonymize",
]

#: The environment variable the command line and the dashboard read the key from (recorded in the step).
KEY_ENV = "PRIVDASH_PSEUDONYM_KEY"
MIN_KEY_BYTES = 16
_FINGERPRINT_MESSAGE = b"privdash key fingerprint"


def drop_identifiers(data: pd.DataFrame, /, *, columns: Sequence[str]) -> TransformResult:
    """Remove ``columns`` from the table (row order and the other columns unchanged)."""
    names = check_columns(data, columns, role="identifier column")
    result = data.drop(columns=list(names))
    summary = {"columns_dropped": list(names), "rows": len(data)}
    return TransformResult(result, Step("drop_identifiers", {"columns": list(names)}), summary)


def _distinct_text(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Each row's code (``-1`` = missing) and the text ``str(value)`` of each distinct value.

    Whole numbers in a float column (floats only because of missing values) are written without ``.0``, so a
    value gets the same text, and pseudonym, whether or not its column has gaps. Values with the same text (``1``
    and ``"1"`` in a mixed column) share a code.
    """
    if pd.api.types.is_float_dtype(column):
        present = column.dropna()
        if len(present) and bool(np.isfinite(present).all()) and bool((present % 1 == 0).all()):
            column = column.astype("Int64")
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    if isinstance(column.dtype, pd.StringDtype):  # text already, distinct: str(value) is the value
        return np.asarray(codes), [str(value) for value in uniques]
    texts = [str(value) for value in uniques]  # once per distinct value, not per row
    text_codes, distinct = pd.factorize(pd.Series(texts, dtype=object))
    codes = np.where(codes >= 0, text_codes[np.maximum(codes, 0)] if len(texts) else -1, -1)
    return codes, [str(value) for value in distinct]


def mask_identifiers(
    data: pd.DataFrame,
    /,
    *,
    columns: Sequence[str],
    keep_first: int = 0,
    keep_last: int = 0,
    mask_char: str = "*",
) -> TransformResult:
    """Mask the characters of ``columns`` except the first ``keep_first`` and last ``keep_last`` (see the module
    docstring); the masked columns become text. Each distinct value is masked once."""
    names = check_columns(data, columns, role="identifier column")
    keep_first = check_positive_int(keep_first, "keep_first", minimum=0)
    keep_last = check_positive_int(keep_last, "keep_last", minimum=0)
    if not isinstance(mask_char, str) or len(mask_char) != 1:
        raise ParameterError(f"mask_char must be a single character, got {mask_char!r}.")
    result = data.copy()
    changed: dict[str, int] = {}
    for name in names:
        codes, texts = _distinct_text(data[name])
        distinct = pd.Series(texts, dtype=object)
        lengths = distinct.str.len().to_numpy()
        shown = (lengths > keep_first + keep_last).astype(np.int64)
        head = distinct.str.slice(0, keep_first).where(shown > 0, "")
        tail = distinct.str.slice(-keep_last if keep_last else None).where((shown > 0) & (keep_last > 0), "")
        hidden = lengths - (head.str.len().to_numpy() + tail.str.len().to_numpy())
        # The run of mask characters depends only on its length: built once per length.
        runs = np.array([mask_char * size for size in range(int(hidden.max(initial=0)) + 1)], dtype=object)
        stars = pd.Series(runs[hidden], index=distinct.index, dtype=object)
        masked = (head + stars + tail).to_numpy(dtype=object)
        result[name] = _expand(masked, codes, data.index)
        changed[name] = int(
            (codes >= 0).sum() - (masked == distinct.to_numpy()).astype(np.int64)[codes[codes >= 0]].sum()
        )
    step = Step(
        "mask_identifiers",
        {"columns": list(names), "keep_first": keep_first, "keep_last": keep_last, "mask_char": mask_char},
    )
    return TransformResult(result, step, {"columns": list(names), "cells_masked": changed})


def _expand(per_value: np.ndarray, codes: np.ndarray, index: pd.Index) -> pd.Series:
    """A text column from one output per distinct value and each row's value code (-1 = missing)."""
    values = per_value[np.maximum(codes, 0)] if len(per_value) else np.full(len(codes), None, dtype=object)
    return pd.Series(values, index=index, dtype=object).where(codes >= 0).astype("str")


def _key_bytes(key: str | bytes) -> bytes:
    raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    if len(raw) < MIN_KEY_BYTES:
        raise ParameterError(
            f"The pseudonymisation key is {len(raw)} bytes long; use at least {MIN_KEY_BYTES} random bytes "
            '(for example the output of `python -c "import secrets; print(secrets.token_hex(32))"`).'
        )
    return raw


def key_fingerprint(key: str | bytes) -> str:
    """A public identifier of ``key``: ``HMAC-SHA256(key, "privdash key fingerprint")``, first 16 hex characters.

    It tells two keys apart without revealing either (recomputing it needs the key).
    """
    return hmac.new(_key_bytes(key), _FINGERPRINT_MESSAGE, hashlib.sha256).hexdigest()[:16]


def pseudonymize(
    data: pd.DataFrame,
    /,
    *,
    columns: Sequence[str],
    key: str | bytes | None = None,
    key_env: str = KEY_ENV,
    length: int = 16,
    key_fingerprint: str | None = None,
) -> TransformResult:
    """Replace the values of ``columns`` by keyed HMAC-SHA256 pseudonyms (see the module docstring).

    Parameters
    ----------
    data
        The table; not modified.
    columns
        Identifier columns to pseudonymise.
    key
        The secret key (required: None raises :class:`ParameterError`).
    key_env
        Name of the environment variable the key is configured in, recorded in the step so that whoever re-applies
        it knows which key to give (default ``PRIVDASH_PSEUDONYM_KEY``); this function does not read it.
    length
        Hex characters kept from each HMAC, 8 to 64 (default 16).
    key_fingerprint
        The fingerprint recorded by an earlier run: the key must match it (re-applying a recipe).

    Returns
    -------
    TransformResult
        The table with text pseudonyms; the step records ``key_env`` and ``key_fingerprint``, never the key; no
        mapping.

    Raises
    ------
    ParameterError
        No key, a key shorter than 16 bytes, a key whose fingerprint differs from ``key_fingerprint``, a length
        outside 8..64, or two distinct values that would share a pseudonym at this length.
    """
    names = check_columns(data, columns, role="identifier column")
    length = check_positive_int(length, "length", minimum=8)
    if length > 64:
        raise ParameterError(f"length must be at most 64 hex characters (256 bits), got {length}.")
    if not key:
        raise ParameterError(
            f"No pseudonymisation key: set the environment variable {key_env} to a secret of at least "
            f"{MIN_KEY_BYTES} characters for the command line and the dashboard, or pass the key explicitly. "
            "There is deliberately no default key."
        )
    secret = _key_bytes(key)
    fingerprint = hmac.new(secret, _FINGERPRINT_MESSAGE, hashlib.sha256).hexdigest()[:16]
    if key_fingerprint is not None and key_fingerprint != fingerprint:
        raise ParameterError(
            f"The pseudonymisation key (fingerprint {fingerprint}) is not the one this step was recorded with "
            f"(fingerprint {key_fingerprint}); pseudonyms would not match the earlier ones."
        )
    result = data.copy()
    for name in names:
        codes, texts = _distinct_text(data[name])
        # One HMAC per distinct value (hashlib has no vectorised form).
        digests = np.array(
            [hmac.digest(secret, value.encode("utf-8"), "sha256").hex()[:length] for value in texts], dtype=object
        )
        if len(set(digests.tolist())) < len(digests):
            raise ParameterError(
                f"Column '{name}': two distinct values share a pseudonym at length {length}; use a longer length."
            )
        result[name] = _expand(digests, codes, data.index)
    step = Step(
        "pseudonymize",
        {"columns": list(names), "key_env": key_env, "length": length, "key_fingerprint": fingerprint},
    )
    summary = {
        "columns": list(names),
        "key_env": key_env,
        "key_fingerprint": fingerprint,
        "length": length,
        "distinct_values": {name: int(data[name].nunique(dropna=True)) for name in names},
    }
    if key_fingerprint is not None:  # a recorded step re-applied: the key of the release it was recorded for
        summary["warning"] = (
            f"The same key (fingerprint {fingerprint}) as the release this step was recorded for: equal values get "
            "equal pseudonyms, so the two releases can be joined on them. Use a new key per release unless linking "
            "them is intended."
        )
    return TransformResult(result, step, summary)


@register_step("drop_identifiers")
def _drop_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return drop_identifiers(data, **params)


@register_step("mask_identifiers")
def _mask_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return mask_identifiers(data, **params)


@register_step("pseudonymize", secrets=("key",))
def _pseudonymize_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return pseudonymize(data, **params)
