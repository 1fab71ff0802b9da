"""The shared validators of ``privdash.errors``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privdash.errors import ParameterError, check_finite


@pytest.mark.parametrize(
    ("value", "number"), [(2, 2.0), (0.5, 0.5), ("1e-6", 1e-6), (" 3 ", 3.0), (np.float32(1.5), 1.5)]
)
def test_check_finite_takes_numbers_and_their_text(value: object, number: float) -> None:
    assert check_finite(value, "x") == number


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "x must be a number, got True."),
        ("a lot", "x must be a number, got 'a lot'."),
        (None, "x must be a number, got None."),
        (math.inf, "x must be a finite number, got inf."),
        ("nan", "x must be a finite number, got 'nan'."),
    ],
)
def test_check_finite_names_the_field(value: object, message: str) -> None:
    with pytest.raises(ParameterError) as raised:
        check_finite(value, "x")
    assert str(raised.value) == message


def test_check_finite_gives_the_example() -> None:
    with pytest.raises(ParameterError, match=r"^ε must be a number such as 0\.5, got 'half'\.$"):
        check_finite("half", "ε", example="0.5")


def test_parameter_checks_refuse_nan_infinity_and_huge_numbers_with_a_parameter_error() -> None:
    import math

    from privdash.errors import ParameterError, check_finite, check_positive_int

    for bad in (math.nan, math.inf, -math.inf, 2.5, "3", True):
        with pytest.raises(ParameterError, match="whole number"):
            check_positive_int(bad, "k")
    assert check_positive_int(np.int64(3), "k") == 3
    with pytest.raises(ParameterError, match=r"about (5000|4999) digits"):
        check_positive_int(-(10**5000), "k")
    for huge in (10**400, 10**5000):
        with pytest.raises(ParameterError, match="too large for a float"):
            check_finite(huge, "epsilon")
