from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.transform.identifiers import (
    KEY_ENV,
    drop_identifiers,
    key_fingerprint,
    mask_identifiers,
    pseudonymize,
)
from privdash.transform.steps import Recipe, apply_recipe

KEY = "correct horse battery staple"
OTHER_KEY = "a completely different secret"


def people() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "email": ["alice@example.com", "bob@x.org", None, "alice@example.com", "ab"],
            "phone": [447700900123, 447700900124, np.nan, 12, 5],
            "age": [34, 51, 27, 34, 60],
        }
    )


def test_drop() -> None:
    result = drop_identifiers(people(), columns=["email", "phone"])
    assert list(result.data.columns) == ["age"]
    assert result.data["age"].tolist() == [34, 51, 27, 34, 60]
    assert result.step.params == {"columns": ["email", "phone"]}
    with pytest.raises(ColumnError, match="did you mean 'email'"):
        drop_identifiers(people(), columns=["emial"])


def test_mask_keeps_ends_and_length() -> None:
    result = mask_identifiers(people(), columns=["email", "phone"], keep_first=2, keep_last=3)
    assert result.data["email"].tolist()[:2] == ["al************com", "bo****org"]
    assert pd.isna(result.data["email"].iloc[2])
    # "ab" is no longer than keep_first + keep_last: masked whole, never published.
    assert result.data["email"].iloc[4] == "**"
    # Whole numbers in a float column are masked as integers ("447700900123", not "447700900123.0").
    assert result.data["phone"].tolist()[:2] == ["44*******123", "44*******124"]
    assert result.data["phone"].tolist()[3:] == ["**", "*"]
    assert result.summary["cells_masked"] == {"email": 4, "phone": 4}
    assert result.data["age"].equals(people()["age"])
    assert result.mapping is None


def test_full_mask_and_custom_character() -> None:
    result = mask_identifiers(people(), columns=["email"], mask_char="#")
    assert result.data["email"].tolist()[1] == "#########"
    with pytest.raises(ParameterError, match="single character"):
        mask_identifiers(people(), columns=["email"], mask_char="**")
    with pytest.raises(ParameterError, match="keep_first"):
        mask_identifiers(people(), columns=["email"], keep_first=-1)


def test_pseudonym_matches_rfc_4231_vector() -> None:
    # RFC 4231 test case 1: key = 20 bytes of 0x0b, data = "Hi There".
    data = pd.DataFrame({"id": ["Hi There"], "x": [1]})
    result = pseudonymize(data, columns=["id"], key=b"\x0b" * 20, length=64)
    assert result.data["id"].iloc[0] == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    short = pseudonymize(data, columns=["id"], key=b"\x0b" * 20)
    assert short.data["id"].iloc[0] == "b0344c61d8db3853"


def test_pseudonyms_are_stable_keyed_and_consistent() -> None:
    first = pseudonymize(people(), columns=["email"], key=KEY)
    second = pseudonymize(people(), columns=["email"], key=KEY)
    other = pseudonymize(people(), columns=["email"], key=OTHER_KEY)
    assert first.data.equals(second.data)
    values = first.data["email"].tolist()
    assert values[0] == values[3] and values[0] != values[1]
    assert pd.isna(values[2])
    assert all(len(v) == 16 for v in (values[0], values[1], values[4]))
    assert set(other.data["email"].dropna()).isdisjoint(set(first.data["email"].dropna()))
    assert first.mapping is None


def test_the_key_is_an_argument_and_never_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    with pytest.raises(ParameterError, match=f"No pseudonymisation key.*{KEY_ENV}"):
        pseudonymize(people(), columns=["email"])
    given = pseudonymize(people(), columns=["email"], key=KEY)
    assert given.step.params["key_env"] == KEY_ENV and given.summary["key_env"] == KEY_ENV
    named = pseudonymize(people(), columns=["email"], key=OTHER_KEY, key_env="MY_KEY")
    assert named.step.params["key_env"] == "MY_KEY"
    assert named.step.params["key_fingerprint"] == key_fingerprint(OTHER_KEY)
    assert not named.data["email"].equals(given.data["email"])


def test_the_key_is_never_recorded(tmp_path) -> None:
    result = pseudonymize(people(), columns=["email"], key=KEY)
    recipe = Recipe((result.step,))
    assert KEY not in recipe.to_json() and KEY not in json.dumps(result.summary)
    assert result.step.params["key_fingerprint"] == key_fingerprint(KEY)
    path = tmp_path / "recipe.json"
    recipe.save(path)
    # Re-applying needs the key, given by the caller, and checks its fingerprint.
    replayed, results = apply_recipe(people(), Recipe.load(path), secrets={"key": KEY})
    assert replayed.equals(result.data)
    assert KEY not in Recipe(tuple(r.step for r in results)).to_json()
    with pytest.raises(ParameterError, match="not the one this step was recorded with"):
        apply_recipe(people(), Recipe.load(path), secrets={"key": OTHER_KEY})
    with pytest.raises(ParameterError, match="No pseudonymisation key"):
        apply_recipe(people(), Recipe.load(path), secrets={"key": None})
    with pytest.raises(ParameterError, match="No pseudonymisation key"):
        apply_recipe(people(), Recipe.load(path))


def test_the_key_is_a_secret_given_when_applying_never_stored() -> None:
    dropped = drop_identifiers(people(), columns=["phone"]).step
    keyed = pseudonymize(people(), columns=["email"], key=KEY).step
    published, results = apply_recipe(people(), [dropped, keyed], secrets={"key": KEY})
    assert list(published.columns) == ["email", "age"] and [r.step.kind for r in results] == [
        "drop_identifiers",
        "pseudonymize",
    ]
    assert published["email"].equals(pseudonymize(people(), columns=["email"], key=KEY).data["email"])
    leaked = Recipe.from_dict({"steps": [{"kind": "pseudonymize", "params": {**keyed.params, "key": KEY}}]})
    with pytest.raises(ParameterError, match="must not contain the secret 'key'"):
        apply_recipe(people(), leaked, secrets={"key": KEY})
    unknown = Recipe.from_dict({"steps": [{"kind": "pseudonymize", "params": {**keyed.params, "salt": 1}}]})
    with pytest.raises(ParameterError, match="Step 'pseudonymize'"):
        apply_recipe(people(), unknown, secrets={"key": KEY})


def test_missing_or_weak_keys_are_refused() -> None:
    with pytest.raises(ParameterError, match="no default key"):
        pseudonymize(people(), columns=["email"])
    with pytest.raises(ParameterError, match="at least 16"):
        pseudonymize(people(), columns=["email"], key="short")
    with pytest.raises(ParameterError, match="No pseudonymisation key"):
        pseudonymize(people(), columns=["email"], key="")


def test_lengths_and_collisions() -> None:
    with pytest.raises(ParameterError, match="at least 8"):
        pseudonymize(people(), columns=["email"], key=KEY, length=4)
    with pytest.raises(ParameterError, match="at most 64"):
        pseudonymize(people(), columns=["email"], key=KEY, length=65)
    # These two values share their first 8 hex characters (0dee2c6a) under this key.
    clash = pd.DataFrame({"id": ["user12528", "user35269"]})
    with pytest.raises(ParameterError, match="share a pseudonym"):
        pseudonymize(clash, columns=["id"], key="collision-test-key-0001", length=8)
    longer = pseudonymize(clash, columns=["id"], key="collision-test-key-0001", length=9)
    assert longer.data["id"].nunique() == 2


def test_numbers_get_the_same_pseudonym_with_or_without_gaps() -> None:
    with_gap = pseudonymize(pd.DataFrame({"id": [12.0, np.nan]}), columns=["id"], key=KEY)
    without = pseudonymize(pd.DataFrame({"id": [12]}), columns=["id"], key=KEY)
    text = pseudonymize(pd.DataFrame({"id": ["12"]}), columns=["id"], key=KEY)
    assert with_gap.data["id"].iloc[0] == without.data["id"].iloc[0] == text.data["id"].iloc[0]


def test_values_with_the_same_text_share_a_pseudonym() -> None:
    mixed = pd.DataFrame({"id": pd.Series([1, "1", "2", None], dtype=object)})
    result = pseudonymize(mixed, columns=["id"], key=KEY)
    values = result.data["id"].tolist()
    assert values[0] == values[1] != values[2]
    assert pd.isna(values[3])
    masked = mask_identifiers(mixed, columns=["id"])
    assert masked.data["id"].tolist()[:3] == ["*", "*", "*"]


def test_a_recorded_step_reapplied_warns_that_the_releases_can_be_joined() -> None:
    first = pseudonymize(people(), columns=["email"], key=KEY)
    assert "warning" not in first.summary  # a first release: nothing to join with yet
    again = pseudonymize(people().iloc[::-1], columns=["email"], key=KEY, key_fingerprint=key_fingerprint(KEY))
    assert "can be joined" in again.summary["warning"] and key_fingerprint(KEY) in again.summary["warning"]
    # The reason for the warning: the same person's pseudonym is the same in both releases.
    assert set(again.data["email"].dropna()) == set(first.data["email"].dropna())


@pytest.mark.parametrize(("first", "last"), [(0, 0), (2, 0), (0, 3), (2, 2), (9, 9)])
def test_masking_a_text_column_equals_masking_its_values_as_objects(first: int, last: int) -> None:
    rng = np.random.default_rng(first + last)
    values = [None, "", "a", "0612345678", "+31 6 1234 5678", "ab", "abcdef", "ébène"]
    column = pd.Series(rng.choice(np.array(values, dtype=object), 300), dtype=object)
    text = mask_identifiers(pd.DataFrame({"v": column.astype("str")}), columns=["v"], keep_first=first, keep_last=last)
    plain = mask_identifiers(pd.DataFrame({"v": column}), columns=["v"], keep_first=first, keep_last=last)
    pd.testing.assert_series_equal(text.data["v"], plain.data["v"])
    assert text.summary == plain.summary
    masked = text.data["v"].dropna()
    assert (masked.str.len() == column.dropna().str.len().to_numpy()).all()
