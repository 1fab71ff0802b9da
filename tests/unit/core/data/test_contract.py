from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from privdash.data.contract import (
    ColumnRole,
    DataContract,
    FieldMetadata,
    StatisticalType,
    suggest_contract,
    suggest_roles,
)
from privdash.data.demo import people_contract, people_table
from privdash.errors import ContractError

ISSUE_SHAPE = {
    "field_metadata": [
        {
            "field_name": "size",
            "personal_data_config": {"is_quasi_id": True},
            "statistical_data_type": "ORDINAL",
            "ordinal_values": ["XS", "S", "M", "L", "XL"],
        },
        {"field_name": "email", "personal_data_config": {"is_direct_id": True}, "statistical_data_type": "NOMINAL"},
        {"field_name": "dx", "personal_data_config": {"is_sensitive": True}, "statistical_data_type": "NOMINAL"},
        {"field_name": "w", "personal_data_config": {"is_weight": True}, "statistical_data_type": "NUMERICAL"},
        {"field_name": "note", "personal_data_config": {}, "statistical_data_type": "NOMINAL", "description": "x"},
    ]
}


def test_issue_shape_is_accepted_and_round_trips(tmp_path: Path) -> None:
    contract = DataContract.from_dict(ISSUE_SHAPE)
    assert contract.quasi_identifiers == ("size",)
    assert contract.identifiers == ("email",)
    assert contract.sensitive == ("dx",)
    assert contract.weight == "w"
    assert contract["note"].role == ColumnRole.INSENSITIVE
    assert contract.ordinal_orders() == {"size": ("XS", "S", "M", "L", "XL")}
    path = tmp_path / "c.json"
    contract.save(path)
    assert json.loads(path.read_text()) == ISSUE_SHAPE
    assert DataContract.load(path) == contract


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"field_name": "a", "personal_data_config": {"is_quasi_id": True, "is_sensitive": True}},
            "more than one role",
        ),
        ({"field_name": "a", "statistical_data_type": "TEXTUAL"}, "unknown statistical_data_type"),
        ({"field_name": "a", "statistical_data_type": "ORDINAL"}, "no ordinal_values"),
        ({"field_name": "a", "statistical_data_type": "ORDINAL", "ordinal_values": ["x", "x"]}, "repeated"),
        ({"field_name": "a", "personal_data_config": {"is_qi": True}}, "unknown personal_data_config"),
        ({"personal_data_config": {}}, "field_name"),
    ],
)
def test_malformed_entries(entry: dict, message: str) -> None:
    with pytest.raises(ContractError, match=message):
        DataContract.from_dict({"field_metadata": [entry]})


def test_malformed_documents(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="field_metadata"):
        DataContract.from_dict({"fields": []})
    with pytest.raises(ContractError, match="not valid JSON"):
        DataContract.from_json("{")
    with pytest.raises(ContractError, match="Cannot read"):
        DataContract.load(tmp_path / "absent.json")
    with pytest.raises(ContractError, match="more than once"):
        DataContract((FieldMetadata("a"), FieldMetadata("a")))


def test_validate_against_data() -> None:
    data = pd.DataFrame({"size": ["S", "XXL"], "email": ["a@b.org", "c@d.org"], "dx": ["x", "y"], "w": [1, 0],
                         "note": ["", ""]})  # fmt: skip
    contract = DataContract.from_dict(ISSUE_SHAPE)
    with pytest.raises(ContractError, match="'XXL'"):
        contract.validate(data)
    fixed = data.assign(size=["S", "XL"])
    with pytest.raises(ContractError, match="Weight column 'w'"):
        contract.validate(fixed)
    contract.validate(fixed.assign(w=[1.0, 2.5]))
    with pytest.raises(ContractError, match="does not have"):
        contract.validate(fixed.drop(columns=["dx"]))
    numeric = DataContract((FieldMetadata("n", statistical_type=StatisticalType.NUMERICAL),))
    with pytest.raises(ContractError, match="non-numbers"):
        numeric.validate(pd.DataFrame({"n": ["1", "two"]}))


def test_updates_are_copies() -> None:
    contract = DataContract.from_dict(ISSUE_SHAPE)
    changed = contract.updated("dx", role=ColumnRole.QUASI_IDENTIFIER)
    assert changed.quasi_identifiers == ("size", "dx") and contract.quasi_identifiers == ("size",)
    assert contract.with_roles({"note": ColumnRole.SENSITIVE}).sensitive == ("dx", "note")
    with pytest.raises(ContractError):
        contract.updated("absent", role=ColumnRole.SENSITIVE)


def test_suggestions_on_the_demo_table() -> None:
    data = people_table(2000)
    roles = {s.name: s.role for s in suggest_roles(data)}
    expected = {c.name: c.role for c in people_contract().fields}
    for name in ("customer_id", "name", "email", "phone", "age", "sex", "postcode", "diagnosis",
                 "transaction_amount"):  # fmt: skip
        assert roles[name] == expected[name], name
    types = {f.name: f.statistical_type for f in suggest_contract(data).fields}
    assert types["postcode"] == StatisticalType.POSTCODE
    assert types["age"] == StatisticalType.NUMERICAL
    assert types["visit_date"] == StatisticalType.DATE


def test_suggestions_by_content_and_weights() -> None:
    n = 50
    data = pd.DataFrame(
        {
            "contact": [f"user{i}@mail.example.com" for i in range(n)],
            "tel": [f"+44 7700 900{i:03d}" for i in range(n)],
            "token": [f"t{i * 7919 % 100003}" for i in range(n)],
            "sampling_weight": [2.5] * n,
            "colour": ["red", "blue"] * (n // 2),
        }
    )
    roles = {s.name: s for s in suggest_roles(data)}
    assert roles["contact"].role == ColumnRole.IDENTIFIER and "e-mail" in roles["contact"].reason
    assert roles["tel"].role == ColumnRole.IDENTIFIER and "phone" in roles["tel"].reason
    assert roles["token"].role == ColumnRole.IDENTIFIER
    assert roles["sampling_weight"].role == ColumnRole.WEIGHT
    assert roles["colour"].role == ColumnRole.QUASI_IDENTIFIER


def test_ordered_categorical_becomes_ordinal_with_its_order() -> None:
    data = pd.DataFrame({"size": pd.Categorical(["S", "M"], categories=["S", "M", "L"], ordered=True), "x": [1, 2]})
    contract = DataContract.for_columns(data, quasi_identifiers=["size"])
    assert contract["size"].statistical_type == StatisticalType.ORDINAL
    assert contract["size"].ordinal_values == ("S", "M", "L")


def test_household_id_is_suggested_once_and_round_trips(data_dir) -> None:
    from privdash.data.tables import read_table

    data = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    roles = {s.name: s for s in suggest_roles(data.assign(hh_id=data["ori_hid"]))}
    assert roles["ori_hid"].role == ColumnRole.HOUSEHOLD and "household" in roles["ori_hid"].reason
    assert roles["hh_id"].role != ColumnRole.HOUSEHOLD  # one household column only
    assert roles["sampling_weight"].role == ColumnRole.WEIGHT
    # a column named like a household id but different in every row is not a household
    assert {s.name: s.role for s in suggest_roles(pd.DataFrame({"hid": range(30)}))}["hid"] != ColumnRole.HOUSEHOLD
    contract = suggest_contract(data)
    assert contract.household == "ori_hid" and contract.entity is None
    again = DataContract.from_dict(contract.to_dict())
    assert again.household == "ori_hid"
    assert again.to_dict()["field_metadata"][12]["personal_data_config"] == {"is_household_id": True}
    two = contract.with_roles({"roof": ColumnRole.HOUSEHOLD})
    with pytest.raises(ContractError, match="Only one household-id column"):
        two.validate(data)
    person = contract.with_roles({"relat": ColumnRole.ENTITY})
    assert person.entity == "relat"


def test_one_weight_and_a_repeating_person_id_are_suggested(data_dir) -> None:
    from privdash.data.tables import read_table

    survey = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    roles = {s.name: s for s in suggest_roles(survey)}
    assert roles["sampling_weight"].role == ColumnRole.WEIGHT
    assert (
        roles["household_weights"].role == ColumnRole.INSENSITIVE
        and "sampling weight" in roles["household_weights"].reason
    )
    assert suggest_contract(survey).weight == "sampling_weight"
    visits = pd.DataFrame({"pid": [1, 1, 2, 3, 3, 3], "patient_id": range(6), "age": [30, 30, 41, 52, 52, 53]})
    roles = {s.name: s.role for s in suggest_roles(visits)}
    assert roles["pid"] == ColumnRole.ENTITY  # repeats: one person, several rows
    assert roles["patient_id"] == ColumnRole.IDENTIFIER  # unique per row: a direct identifier
    assert suggest_contract(visits).entity == "pid"
    with_gap = visits.astype({"pid": "float64"}).assign(pid=[1, 1, None, 3, 3, 3])
    assert {s.name: s.role for s in suggest_roles(with_gap)}["pid"] != ColumnRole.ENTITY  # a missing id cannot be one
