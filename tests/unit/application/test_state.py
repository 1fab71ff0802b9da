"""URL view state: compact, lossless, value-free, and strict about damaged links."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privdash.application.state import (
    DEFAULTS,
    StateError,
    ViewState,
    apply_order_permutation,
    order_permutation,
    sorted_labels,
)
from privdash.data.contract import ColumnRole, StatisticalType
from privdash.measure.classes import MissingPolicy


def example() -> ViewState:
    return ViewState(
        dataset="AbCdEfGhIjKlMnOpQrStUv",
        roles={"age": ColumnRole.QUASI_IDENTIFIER, "email": ColumnRole.IDENTIFIER, "diag": ColumnRole.SENSITIVE},
        types={"age": StatisticalType.NUMERICAL, "email": StatisticalType.NOMINAL, "diag": StatisticalType.ORDINAL},
        orders={"diag": (2, 0, 1)},
        missing=MissingPolicy.WILDCARD,
        k=3,
        l=4,
        t=0.35,
        max_risk=0.1,
        violating=True,
    )


def test_round_trip_through_the_query_string() -> None:
    state = example()
    search = state.to_search()
    assert search.startswith("?s=")
    assert ViewState.from_search(search) == state
    assert ViewState.decode(state.encode()) == state


def test_defaults_are_left_out_and_the_empty_state_has_no_query() -> None:
    assert DEFAULTS.to_search() == ""
    assert ViewState.from_search("") == DEFAULTS
    assert ViewState(dataset="demo:people").to_dict() == {"v": 1, "d": "demo:people"}


def test_roles_keep_column_order() -> None:
    state = example()
    assert ViewState.decode(state.encode()).quasi_identifiers == ("age",)
    assert list(ViewState.decode(state.encode()).roles) == ["age", "email", "diag"]


def test_href_carries_the_state() -> None:
    assert example().href("/risk").startswith("/risk?s=")
    assert DEFAULTS.href("/risk") == "/risk"


@pytest.mark.parametrize(
    "encoded",
    ["not base64 !!", "AAAA", "eJzLSM3JyQcABiwCFQ", "x" * 70_000],
)
def test_damaged_links_raise_a_clear_error(encoded: str) -> None:
    with pytest.raises(StateError):
        ViewState.decode(encoded)


def test_wrong_version_and_bad_values_are_refused() -> None:
    with pytest.raises(StateError, match="incompatible version"):
        ViewState.from_dict({"v": 99})
    with pytest.raises(StateError):
        ViewState.from_dict({"v": 1, "c": [["age", "zz"]]})
    with pytest.raises(StateError):
        ViewState.from_dict({"v": 1, "k": 0})
    with pytest.raises(StateError):
        ViewState.from_dict({"v": 1, "t": 1.5})
    with pytest.raises(StateError, match="permutation"):
        ViewState.from_dict({"v": 1, "o": {"size": [0, 0, 1]}})
    with pytest.raises(StateError):
        ViewState.from_dict({"v": 1, "m": "sometimes"})


@pytest.mark.parametrize(
    "dataset", ["../../etc/passwd", "a" * 5000, "demo:../..", "demo:", "AbCdEfGhIjKlMnOpQrSt\x00v", "A" * 21, 7, ["x"]]
)
def test_a_dataset_id_of_neither_form_is_refused_while_the_link_is_read(dataset: object) -> None:
    with pytest.raises(StateError, match="dataset id is malformed"):
        ViewState.from_dict({"v": 1, "d": dataset})
    with pytest.raises(StateError, match="dataset id is malformed"):
        ViewState.decode(ViewState(dataset="../x").encode())  # built unchecked, refused when a link is read
    with pytest.raises(StateError, match="dataset id is malformed"):
        ViewState().updated(dataset=dataset)
    for good in ("demo:people", "AbCdEfGhIjKlMnOpQrSt_-"):
        assert ViewState.from_dict({"v": 1, "d": good}).dataset == good


def test_with_quasi_identifiers_moves_roles() -> None:
    state = example().with_quasi_identifiers(["email"], ["age", "email"])
    assert state.roles["email"] == ColumnRole.QUASI_IDENTIFIER  # QI wins over sensitive
    assert state.roles["age"] == ColumnRole.SENSITIVE
    assert state.roles["diag"] == ColumnRole.INSENSITIVE  # lost its sensitive role


def test_with_columns_drops_the_order_of_a_column_that_is_no_longer_ordinal() -> None:
    state = example().with_columns(types={"diag": "NOMINAL"})
    assert "diag" not in state.orders
    assert state.types["diag"] == StatisticalType.NOMINAL


@pytest.mark.parametrize(("roles", "types"), [({"age": "nope"}, None), (None, {"age": 7}), ({"age": ["x"]}, None)])
def test_with_columns_refuses_a_role_or_type_that_is_not_one(roles: Any, types: Any) -> None:
    with pytest.raises(StateError, match="must be one of"):
        example().with_columns(roles, types)


def test_order_permutations_carry_no_values() -> None:
    values = ["M", "XS", "L", "S", "M", None]
    order = ["XS", "S", "M", "L"]
    perm = order_permutation(order, values)
    assert perm == (3, 2, 1, 0)  # positions in the text-sorted list L, M, S, XS
    assert apply_order_permutation(perm, values) == order
    assert sorted_labels(values) == ["L", "M", "S", "XS"]
    with pytest.raises(StateError):
        order_permutation(["XS", "S"], values)
    with pytest.raises(StateError):
        apply_order_permutation((0, 1), values)


def test_the_encoded_state_holds_no_data_value() -> None:
    state = example()
    obj = state.to_dict()
    assert set(obj) <= {"v", "d", "c", "o", "m", "k", "l", "t", "r", "x"}
    assert all(isinstance(index, int) for perm in obj["o"].values() for index in perm)


names = st.text(min_size=1, max_size=12)


@given(
    roles=st.dictionaries(names, st.sampled_from(list(ColumnRole)), max_size=8),
    kind=st.sampled_from(list(StatisticalType)),
    k=st.integers(1, 1000),
    t=st.floats(0, 1),
    missing=st.sampled_from(list(MissingPolicy)),
)
def test_any_state_survives_the_round_trip(
    roles: dict[str, ColumnRole], kind: StatisticalType, k: int, t: float, missing: MissingPolicy
) -> None:
    state = ViewState(dataset="demo:people", roles=roles, types=dict.fromkeys(roles, kind), k=k, t=t, missing=missing)
    assert ViewState.from_search(state.to_search()) == state


def _encode(raw: str) -> str:
    import base64
    import zlib

    return base64.urlsafe_b64encode(zlib.compress(raw.encode(), 9)).decode().rstrip("=")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"v": 1, "k": 30000000000}', "k must be a whole number between 1 and 1,000,000,000"),
        ('{"v": 1, "l": 0}', "l must be a whole number between 1 and"),
        ('{"v": 1, "k": NaN}', "k must be a whole number"),
        ('{"v": 1, "k": 1e309}', "k must be a whole number"),
        ('{"v": 1, "k": 5.5}', "k must be a whole number"),
        ('{"v": 1, "t": Infinity}', "t must be a finite number"),
        ('{"v": 1, "o": {"a": [' + ",".join(map(str, range(10_001))) + "]}}", "more than 10,000 values"),
        ('{"v": 1, "f": [' + ",".join(['{"kind": "drop_identifiers", "columns": ["a"]}'] * 51) + "]}", "51 fix steps"),
        ('{"v": 1, "g": ' + '{"a": ' * 20 + "1" + "}" * 21, "nested too deeply"),
        ('{"v": 1, "g": {"a": [1e300]}}', "number out of range"),
        ('{"v": 1, "g": {"a": "' + "x" * 2_000_000 + '"}}', "unpacks to more than 1,000,000 bytes"),
        ('{"v": 1, "f": [' + "[" * 100_000 + "]" * 100_000 + "]}", "damaged"),
    ],
)
def test_every_size_and_number_of_a_link_is_bounded(raw: str, message: str) -> None:
    with pytest.raises(StateError, match=re.escape(message)):
        ViewState.decode(_encode(raw))


def test_a_state_built_by_a_callback_is_bounded_too() -> None:
    with pytest.raises(StateError, match="more than the 10,000 allowed"):
        ViewState().updated(roles={f"c{i}": ColumnRole.QUASI_IDENTIFIER for i in range(10_001)})
    with pytest.raises(StateError, match="k must be a whole number"):
        ViewState().updated(k=float("inf"))


def test_a_hierarchy_in_a_link_has_at_most_a_hundred_levels() -> None:
    rule = {"builder": "intervals", "widths": list(range(1, 102))}
    with pytest.raises(StateError, match="more than 100 numbers"):
        ViewState().updated(fix=({"kind": "generalize", "column": "age", "rule": rule, "level": 1},))
    rule["widths"] = list(range(1, 101))
    assert ViewState().updated(fix=({"kind": "generalize", "column": "age", "rule": rule, "level": 1},)).fix


def test_model_risk_methods_round_trip_in_sdcmicro_spelling() -> None:
    state = ViewState(dataset="demo:people").updated(model_risk=("ipf", "Default", "IPF"))
    assert state.model_risk == ("IPF", "default")
    again = ViewState.decode(state.encode())
    assert again.model_risk == ("IPF", "default") and again.to_dict()["mr"] == ["IPF", "default"]
    assert "mr" not in ViewState(dataset="demo:people").to_dict()
    with pytest.raises(StateError, match="CE, PML"):
        state.updated(model_risk=("poisson",))
    broken = dict(state.to_dict(), mr="default")  # a string, not a list: read letter by letter, refused
    with pytest.raises(StateError):
        ViewState.from_dict(broken)
