"""Bad recipe files and bad step parameters: each is read, or refused with a ParameterError that says what is
wrong, never a traceback, a hang or memory exhausted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.transform.microaggregation import microaggregation
from privdash.transform.perturbation import MAX_PRAM_CATEGORIES, add_noise, pram, rank_swap
from privdash.transform.steps import (
    MAX_RECIPE_BYTES,
    MAX_RECIPE_DEPTH,
    MAX_RECIPE_STEPS,
    Recipe,
    Step,
    apply_recipe,
    apply_step,
)

TOP_CODE = {"kind": "top_bottom_coding", "params": {"column": "age", "top": 60}}
RECIPE = {"privdash_recipe": 1, "steps": [TOP_CODE]}
TABLE = pd.DataFrame({"age": [23, 45, 67, 81, 34], "zip": ["12345", "12346", "2234", "22345", "1"]})


def write(tmp_path: Path, content: bytes, name: str = "recipe.json") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    "encoding",
    ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"],
)
def test_unicode_encodings_json_allows_are_read(tmp_path: Path, encoding: str) -> None:
    # utf-16 / utf-32 write a byte-order mark; utf-16-le / -be have none and are told by their zero bytes.
    path = write(tmp_path, json.dumps(RECIPE).encode(encoding))
    recipe = Recipe.load(path)
    assert recipe.steps == (Step("top_bottom_coding", {"column": "age", "top": 60}),)
    published, _ = apply_recipe(TABLE, recipe)
    assert published["age"].tolist() == [23, 45, 60, 60, 34]


def test_latin1_is_refused_naming_the_byte(tmp_path: Path) -> None:
    text = json.dumps({"steps": [{"kind": "drop_identifiers", "params": {"columns": ["prénom"]}}]}, ensure_ascii=False)
    path = write(tmp_path, text.encode("latin-1"))
    position = text.encode("latin-1").index(b"\xe9")
    with pytest.raises(ParameterError, match=rf"not UTF-8 text: byte 0xe9 at position {position} .*RFC 8259"):
        Recipe.load(path)


def test_damaged_utf16_is_refused(tmp_path: Path) -> None:
    # A byte-order mark, then an odd number of bytes with a lone high surrogate: not UTF-16.
    path = write(tmp_path, b"\xff\xfe{\x00\x00\xd8")
    with pytest.raises(ParameterError, match="starts as UTF-16 text but is not valid UTF-16"):
        Recipe.load(path)


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    deep = write(tmp_path, b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(ParameterError, match=f"more than {MAX_RECIPE_DEPTH} levels deep"):
        Recipe.load(deep)
    # Below the parser's own limit but deeper than any recipe: the same refusal.
    nested: object = 1
    for _ in range(MAX_RECIPE_DEPTH + 5):
        nested = [nested]
    shallow = {"steps": [{"kind": "drop_identifiers", "params": {"columns": nested}}]}
    with pytest.raises(ParameterError, match="levels deep"):
        Recipe.from_json(json.dumps(shallow))


@pytest.mark.parametrize(
    ("number", "words"),
    [
        ("9" * 5000, "5,000 digits"),
        ("-" + "1" * 40, "digits|beyond what a recipe may hold"),
        ("9223372036854775808", "9223372036854775808, beyond"),
        ("1e999", "beyond the range of a floating-point number"),
        ("NaN", "NaN, which is not a JSON number"),
        ("-Infinity", "-Infinity, which is not a JSON number"),
    ],
)
def test_numbers_json_cannot_hold_are_refused(number: str, words: str) -> None:
    text = '{"steps": [{"kind": "top_bottom_coding", "params": {"column": "age", "top": ' + number + "}}]}"
    with pytest.raises(ParameterError, match=words):
        Recipe.from_json(text, "The recipe r.json")


@pytest.mark.parametrize(
    ("recipe", "words"),
    [
        ({"steps": {"kind": "add_noise"}}, "its 'steps' is an object"),
        ({"steps": "add_noise"}, "its 'steps' is the text 'add_noise'"),
        ({"step": [TOP_CODE]}, "unknown key\\(s\\) 'step' \\(did you mean 'steps'\\?\\)"),
        ([TOP_CODE], "JSON object with a 'steps' list, got a list"),
        (
            {"steps": [{"kind": "add_nosie", "params": {}}]},
            "Step 1 of the recipe: Unknown step kind 'add_nosie' \\(did you mean 'add_noise'\\?\\)",
        ),
        (
            {"steps": [TOP_CODE, {"kind": "rank_swap", "p": 5}]},
            "Step 2 of the recipe: .*unknown key\\(s\\) 'p'.* inside 'params'",
        ),
        ({"steps": [{"kind": "rank_swap", "params": [5]}]}, "'params' must be an object, got a list"),
        ({"steps": [{"kind": 7}]}, "must be an object with a 'kind' and 'params'"),
        ({"privdash_recipe": True, "steps": []}, "Recipe version True is not supported"),
        ({"privdash_recipe": 2, "steps": []}, "Recipe version 2 is not supported"),
        ({"steps": [TOP_CODE] * (MAX_RECIPE_STEPS + 1)}, f"{MAX_RECIPE_STEPS + 1:,} steps, more than"),
    ],
)
def test_recipes_of_the_wrong_shape_are_refused(recipe: object, words: str) -> None:
    with pytest.raises(ParameterError, match=words):
        Recipe.from_json(json.dumps(recipe))


def test_empty_and_oversized_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="is empty"):
        Recipe.load(write(tmp_path, b" \n"))
    with pytest.raises(ParameterError, match="not JSON: Expecting"):
        Recipe.load(write(tmp_path, b"{'steps': []}"))
    # A sparse file: its size is refused before a byte is read.
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(MAX_RECIPE_BYTES + 1)
    with pytest.raises(ParameterError, match="more than a recipe may be \\(at most 64 MB\\)"):
        Recipe.load(big)
    with pytest.raises(ParameterError, match="more than a recipe may be"):
        Recipe.from_bytes(b" " * (MAX_RECIPE_BYTES + 1))
    with pytest.raises(ParameterError, match="Cannot read the recipe"):
        Recipe.load(tmp_path)  # a folder
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        locked = write(tmp_path, json.dumps(RECIPE).encode(), "locked.json")
        locked.chmod(0)
        with pytest.raises(ParameterError, match="Permission denied"):
            Recipe.load(locked)


def test_a_masking_rule_of_a_billion_steps_is_capped_by_the_longest_value() -> None:
    rule = {"builder": "masking", "steps": 1e9, "char": "*", "top": True}
    step = {"kind": "generalize", "params": {"columns": {"zip": {"level": 2, "hierarchy": {"rule": rule}}}}}
    recipe = Recipe.from_json(json.dumps({"steps": [step]}))
    published, results = apply_recipe(TABLE, recipe)
    assert published["zip"].tolist() == ["123**", "123**", "22**", "223**", "*"]
    assert results[0].step.params["columns"]["zip"]["hierarchy"]["rule"]["steps"] == 5


@pytest.mark.parametrize(
    ("step", "error", "words"),
    [
        (Step("add_noise", {"columns": ["age"], "share": 1e308, "seed": 1}), ParameterError, r"\[0, 100\]"),
        (Step("add_noise", {"columns": ["age"], "share": float("nan"), "seed": 1}), ParameterError, "finite"),
        (Step("add_noise", {"columns": ["age"], "share": 10**5000}), ParameterError, "about 5,000 digits"),
        (Step("rank_swap", {"columns": ["age"], "p": 10**5000}), ParameterError, "about 5,000 digits"),
        (Step("rank_swap", {"columns": ["age"], "p": 5, "seed": 2**64}), ParameterError, "seed is 1844674407"),
        (
            Step("pram", {"columns": ["zip"], "pd": 10**400}),
            ParameterError,
            r"pd is a whole number of about 40\d digits",
        ),
        (Step("pram", {"columns": ["zip"], "alpha": float("inf")}), ParameterError, "alpha must be a finite"),
        (Step("pram", {"columns": ["zip"], "matrix": {"1": {"1": 10**40}}}), ParameterError, "matrix.1.1 is a whole"),
        (Step("top_bottom_coding", {"column": "agee", "top": 60}), ColumnError, "did you mean 'age'"),
        (
            Step("microaggregation", {"quasi_identifiers": ["age"], "k": 2, "decimals": 1e308}),
            ParameterError,
            "decimals must be at most 15",
        ),
    ],
)
def test_step_parameters_beyond_their_range_are_refused(step: Step, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        apply_step(TABLE, step)


def test_python_callers_get_the_same_refusals() -> None:
    frame = pd.DataFrame({"v": [1.0, 2.0, 3.0], "c": ["a", "b", "a"]})
    with pytest.raises(ParameterError, match="about 5,000 digits"):
        rank_swap(frame, columns=["v"], p=10**5000)
    with pytest.raises(ParameterError, match="pd must be a finite number"):
        pram(frame, columns=["c"], pd=10**400)
    with pytest.raises(ParameterError, match="seed must be a whole number from 0"):
        add_noise(frame, columns=["v"], share=0.1, seed=2**70)
    with pytest.raises(ParameterError, match=r"probability in \[0, 1\], got a whole number of about 4\d digits"):
        pram(frame, columns=["c"], matrix={"a": {"a": 10**40}, "b": {"b": 1}})
    with pytest.raises(ParameterError, match="decimals must be at most 15"):
        microaggregation(frame, quasi_identifiers=["v"], k=2, decimals=10**19)


def test_noise_that_overflows_the_float_range_is_refused() -> None:
    huge = pd.DataFrame({"v": [1e308, -1e308, 1.7e308, 0.0]})
    with pytest.raises(ParameterError, match="beyond the floating-point range"):
        add_noise(huge, columns=["v"], share=50, seed=1)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")  # the sums of squares of such values overflow
def test_microaggregation_rounding_keeps_means_too_large_to_round() -> None:
    frame = pd.DataFrame({"v": [1e300, 1e300, 1.5, 2.5]})
    published = microaggregation(frame, quasi_identifiers=["v"], k=2, decimals=15).data["v"].to_numpy()
    assert np.isfinite(published).all() and published.tolist() == [1e300, 1e300, 2.0, 2.0]


def test_pram_refuses_more_categories_than_its_dense_matrix_holds() -> None:
    frame = pd.DataFrame({"id": [f"p{i}" for i in range(MAX_PRAM_CATEGORIES + 1)]})
    with pytest.raises(ParameterError, match=f"{MAX_PRAM_CATEGORIES + 1:,} categories, more than"):
        pram(frame, columns=["id"], seed=1)
    matrix = {f"p{i}": {f"p{i}": 1.0} for i in range(MAX_PRAM_CATEGORIES + 1)}
    with pytest.raises(ParameterError, match="PRAM matrix has 2,001 categories"):
        pram(frame, columns=["id"], matrix=matrix, seed=1)


@pytest.mark.parametrize(
    ("matrix", "words"),
    [
        ({"a": {"a": 0.5, "b": 0.4}, "b": {"b": 1}}, "Row 'a' of the PRAM matrix sums to 0.9, not 1"),
        ({"a": {"a": 1.5, "b": -0.5}, "b": {"b": 1}}, "must be a probability in \\[0, 1\\], got 1.5"),
        ({"a": {"a": float("nan")}, "b": {"b": 1}}, "must be a number, got nan"),
        ({"a": {"c": 1}, "b": {"b": 1}}, "moves records to 'c', which has no row"),
        ({"a": [1], "b": {"b": 1}}, "Row 'a' of the PRAM matrix must be an object"),
        ({"b": {"b": 1}}, "no row for the value\\(s\\) 'a'"),
    ],
)
def test_bad_pram_matrices_name_the_row(matrix: dict, words: str) -> None:
    frame = pd.DataFrame({"c": ["a", "b", "a"]})
    with pytest.raises(ParameterError, match=words):
        pram(frame, columns=["c"], matrix=matrix, seed=1)


@pytest.mark.parametrize(
    ("step", "words"),
    [
        ({"kind": "add_noise", "params": {"columns": "age", "share": 0.1}}, r"columns must be a list .*got 'age'"),
        ({"kind": "rank_swap", "params": {"columns": {"age": 5}, "p": 5}}, "columns must be a list"),
        ({"kind": "pram", "params": {"columns": 7}}, "columns must be a list .*got 7"),
        (
            {"kind": "shuffling", "params": {"columns": ["age"], "quasi_identifiers": "zip"}},
            "quasi_identifiers must be a list",
        ),
    ],
)
def test_a_column_name_where_a_list_belongs_is_refused(step: dict, words: str) -> None:
    # Read as a list, the text 'age' would be the columns 'a', 'g' and 'e'.
    with pytest.raises(ParameterError, match=words):
        apply_recipe(TABLE, Recipe.from_json(json.dumps({"steps": [step]})))
