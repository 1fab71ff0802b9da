"""Bad attack inputs: each is refused with a specific error naming what is wrong, and a release the attacker cannot
read is never reported as a success of 0%. Values are matched as the risk models tell them apart."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privdash.attack import UnmatchedValuesError, attack_release
from privdash.errors import ColumnError, DataReadError, ParameterError
from privdash.measure.diagnose import diagnose
from privdash.transform.identifiers import pseudonymize
from privdash.transform.steps import Recipe

TOWNS = pd.DataFrame(
    {
        "town": [" Bath", "Bath ", "Bath", "York", "York", "Leeds"],
        "age": [30, 40, 50, 60, 60, 70],
        "income": ["low", "high", "low", "high", "low", "low"],
    }
)
KEY = "k" * 32


def test_text_matches_exactly_as_the_risk_models_compare_it() -> None:
    # ' Bath', 'Bath ' and 'Bath' are three classes for the risk models, so three values for the attacker.
    report = attack_release(TOWNS, TOWNS, ["town"])
    assert report.linkage.success_rate == pytest.approx(diagnose(TOWNS, ["town"]).risk.prosecutor.average)
    assert report.linkage.success_rate == pytest.approx(5 / 6)  # 5 classes over 6 records
    # Without a plain 'Bath' in the original, a release that trimmed the spaces publishes a value nobody holds.
    spaced = TOWNS.drop(index=2)
    with pytest.raises(UnmatchedValuesError, match=r"'town' \(1 value: 'Bath'\)") as refused:
        attack_release(spaced, spaced.assign(town=spaced["town"].str.strip()), ["town"])
    assert refused.value.unmatched == {"town": (1, ("Bath",))}
    # ' Bath' released as ' Bath' is found: the spaces are part of the value.
    assert attack_release(spaced, spaced, ["town"]).matching["town"] == {"equal": 4, "unmatched": 0}


def test_numbers_still_match_their_text() -> None:
    # A released column of labels is read as text: '60' and 60.0 are the number 60.
    released = TOWNS.assign(age=["30", "40", "50", "60", "60.0", "70"])
    assert attack_release(TOWNS, released, ["age"]).linkage.success_rate == pytest.approx(5 / 6)


@pytest.mark.parametrize(
    ("released", "columns"),
    [
        # Labels of a hierarchy the attacker was not given.
        (TOWNS.assign(town=["South", "South", "South", "North", "North", "North"]), ["town"]),
        # A release of other people: no value in common.
        (pd.DataFrame({"town": ["Hull"] * 3, "age": [30, 40, 50], "income": ["mid"] * 3}), ["town", "income"]),
        # An infinite number where the original holds finite ones.
        (TOWNS.assign(age=[np.inf, 40, 50, 60, 60, 70]), ["age"]),
        # Unmatched values in a column no attack guesses: linkage still reads it.
        (TOWNS.assign(income=["?"] * 6), ["income"]),
    ],
)
def test_unmatched_values_refuse_the_attack(released: pd.DataFrame, columns: list[str]) -> None:
    with pytest.raises(UnmatchedValuesError) as refused:
        attack_release(TOWNS, released, ["town", "age"], sensitive="income")
    assert sorted(refused.value.unmatched) == sorted(columns)
    assert isinstance(refused.value, ColumnError) and "cannot be measured" in str(refused.value)
    for column in columns:
        assert f"'{column}' (" in str(refused.value)


def test_allowed_unmatched_values_are_measured_and_listed() -> None:
    released = TOWNS.assign(town=["Hull", "Bath ", "Bath", "York", "York", "Leeds"])
    report = attack_release(TOWNS, released, ["town", "age"], allow_unmatched=True)
    payload = json.loads(json.dumps(report.to_dict()))
    assert payload["unmatched"] == {"town": {"values": 1, "examples": ["Hull"]}}
    # The first record is published as 'Hull', which stands for no one: it is never linked. The others are found
    # as in the original: 1 each, the two (York, 60) records 1/2 each.
    assert report.linkage.success_rate == pytest.approx(4 / 6)


def test_pseudonyms_of_a_recipe_stand_for_any_value() -> None:
    people = TOWNS.assign(name=[f"person {i}" for i in range(6)])
    fix = pseudonymize(people, columns=["name"], key=KEY)
    with pytest.raises(UnmatchedValuesError, match="'name'"):
        attack_release(people, fix.data, ["town", "age"])
    report = attack_release(people, fix.data, ["town", "age"], recipe=Recipe((fix.step,)))
    assert report.matching["name"]["wildcard"] == 6
    assert report.linkage.success_rate == pytest.approx(
        attack_release(TOWNS, TOWNS, ["town", "age"]).linkage.success_rate
    )


@pytest.mark.parametrize(
    ("original", "released", "kwargs", "error", "words"),
    [
        (TOWNS, TOWNS.iloc[:0], {}, DataReadError, "released table is empty"),
        (TOWNS, TOWNS[[]], {}, DataReadError, "released table is empty"),
        (TOWNS, pd.concat([TOWNS, TOWNS[["age"]]], axis=1), {}, ColumnError, "several columns named 'age'"),
        (pd.concat([TOWNS, TOWNS[["town"]]], axis=1), TOWNS, {}, ColumnError, "original table has several columns"),
        (TOWNS, TOWNS.rename(columns={"town": "twn"}), {}, ColumnError, "did you mean 'town'"),
        (TOWNS, TOWNS, {"seed": 10**5000}, ParameterError, "seed must be a whole number from 0 to"),
        (TOWNS, TOWNS, {"seed": 2**63}, ParameterError, "seed must be a whole number from 0 to"),
        (TOWNS, TOWNS, {"n_targets": 0}, ParameterError, "at least 1"),
        (TOWNS, TOWNS, {"n_targets": 2.5}, ParameterError, "whole number"),
        (TOWNS, TOWNS, {"sensitive": "town"}, ColumnError, "both a quasi-identifier and the sensitive"),
        (TOWNS, TOWNS.assign(town=[["x"], "York", "York", "York", "York", "York"]), {}, ParameterError, "plain values"),
        (TOWNS, TOWNS, {"control": TOWNS[["town"]]}, ColumnError, "column of the control table"),
        (TOWNS, TOWNS.to_dict(), {}, ParameterError, "must be a pandas DataFrame"),
    ],
)
def test_bad_inputs_are_named(original: pd.DataFrame, released: object, kwargs: dict, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        attack_release(original, released, ["town"], **kwargs)  # type: ignore[arg-type]
