"""privdash.validation: constraints turn raw values (numbers, texts of a form or a command line) into checked ones,
with a message that names the parameter, says what it must be and shows what was given."""

from __future__ import annotations

import numpy as np
import pytest

from privdash.errors import ParameterError, PrivdashError
from privdash.validation import Boolean, Column, Columns, Interval, Mapping, StrOptions, Text, check_param


class OwnError(PrivdashError):
    """A caller's own error class (a link's, a form's)."""


@pytest.mark.parametrize(
    ("value", "constraint", "expected"),
    [
        (5, Interval(int, 2, None, closed="left"), 5),
        (5.0, Interval(int, 2, None, closed="left"), 5),
        (np.int64(7), Interval(int, 1, 10), 7),
        (0, Interval(float, 0, 1), 0.0),
        (1, Interval(float, 0, 1), 1.0),
        (0.5, Interval(float, 0, 1, closed="neither"), 0.5),
        ("local", StrOptions(("global", "local")), "local"),
        ("partial", StrOptions(("global", "local"), deprecated={"partial": "local"}), "local"),
        (True, Boolean(), True),
        (0, Boolean(), False),
        (("a", "b"), Columns(), ["a", "b"]),
        ([], Columns(min_items=0), []),
        ("age", Column(), "age"),
        ({"a": 1}, Mapping(), {"a": 1}),
        ("x", Text(), "x"),
    ],
)
def test_accepted_values_in_canonical_form(value: object, constraint: object, expected: object) -> None:
    checked = check_param(value, constraint, "x")  # type: ignore[arg-type]
    assert checked == expected and type(checked) is type(expected)


@pytest.mark.parametrize(
    ("value", "constraint", "message"),
    [
        (1, Interval(int, 2, None, closed="left"), "k must be a whole number of at least 2, got 1."),
        (2.5, Interval(int, 2, None, closed="left"), "k must be a whole number, got 2.5."),
        (True, Interval(int, 2, None, closed="left"), "k must be a whole number of at least 2, got True."),
        (float("nan"), Interval(int, 1, 10), "k must be a whole number, got nan."),
        (1.5, Interval(float, 0, 1), "k must be a number between 0 and 1, got 1.5."),
        (0, Interval(float, 0, 1, closed="right"), "k must be a number above 0 and at most 1, got 0."),
        (0, Interval(float, 0, None, closed="neither"), "k must be a number above 0, got 0."),
        (float("inf"), Interval(float, None, None), "k must be a finite number, got inf."),
        (10**400, Interval(float, None, None), "k must be a finite number, got a number too large for a float."),
        ("5", Interval(int, 1, 10), "k must be a whole number between 1 and 10, got '5'."),
        ("partial", StrOptions(("global", "local")), "k must be one of 'global', 'local', got 'partial'."),
        ("yes", Boolean(), "k must be true or false, got 'yes'."),
        (["a", "a"], Columns(), "k lists a column more than once: a."),
        ([], Columns(), "Choose at least one column (k)."),
        ("a", Columns(), "k must be a list of column names, got 'a'."),
        (3, Column(), "k must be a column name, got 3."),
        ([1], Mapping(), "k must be an object, got [1]."),
        (None, Interval(int, 1, None, closed="left"), "Give k."),
    ],
)
def test_refused_values_say_what_the_parameter_must_be(value: object, constraint: object, message: str) -> None:
    with pytest.raises(ParameterError) as caught:
        check_param(value, constraint, "k")  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_texts_of_a_form_or_a_command_line_are_parsed_first() -> None:
    whole = Interval(int, 1, None, closed="left")
    assert check_param("5", whole, "k", text=True) == 5
    assert check_param(" 0.25 ", Interval(float, 0, 1), "t", text=True) == 0.25
    assert check_param("a, b", Columns(), "columns", text=True) == ["a", "b"]
    assert check_param("no", Boolean(), "labels", text=True) is False
    assert check_param("", whole, "k", text=True, optional=True) is None
    with pytest.raises(ParameterError, match="Give the level"):
        check_param("  ", whole, "The level", text=True)
    with pytest.raises(ParameterError, match="k must be a whole number of at least 1, got 'five'"):
        check_param("five", whole, "k", text=True)
    with pytest.raises(ParameterError, match="t must be a finite number, got 'nan'"):
        check_param("nan", Interval(float, 0, 1), "t", text=True)


def test_the_caller_names_its_error_class_and_several_constraints_may_accept() -> None:
    with pytest.raises(OwnError, match="The target k must be a whole number between 1 and 9"):
        check_param(10, Interval(int, 1, 9), "The target k", error=OwnError)
    either = [Interval(float, 0, 1), StrOptions(("auto",))]
    assert check_param("auto", either, "share") == "auto" and check_param(0.5, either, "share") == 0.5
    with pytest.raises(ParameterError, match="share must be a number between 0 and 1"):  # the first one's message
        check_param("manual", either, "share")


def test_bad_constraints_are_refused_when_made() -> None:
    with pytest.raises(TypeError):
        Interval(str, 0, 1)
    with pytest.raises(ValueError, match="closed"):
        Interval(int, 0, 1, closed="open")
    with pytest.raises(ValueError, match="left bound above"):
        Interval(int, 2, 1)
