from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privdash.data.contract import DataContract
from privdash.data.demo import people_contract, people_table
from privdash.errors import ColumnError, ContractError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.measure.diagnose import diagnose


def worked_example() -> pd.DataFrame:
    """peers.md §4."""
    return pd.DataFrame(
        {
            "age": ["30-39"] * 7 + ["40-49"] * 3,
            "sex": ["M"] * 4 + ["F"] * 3 + ["M"] * 3,
            "diag": ["flu", "flu", "flu", "cancer", "flu", "cancer", "hiv", "hiv", "hiv", "flu"],
            "income": [30, 30, 40, 50, 40, 60, 100, 50, 60, 100],
        }
    )


def population_table() -> pd.DataFrame:
    """A population in which the three classes have F = (40, 30, 6) people, plus people of other classes."""
    return pd.DataFrame(
        {
            "age": ["30-39", "30-39", "40-49", "50-59"],
            "sex": ["M", "F", "M", "F"],
            "people": [40, 30, 6, 24],
        }
    )


def test_worked_example_end_to_end() -> None:
    result = diagnose(worked_example(), ["age", "sex"], sensitive=["diag", "income"], max_risk=0.3)
    assert result.k == 3 and result.classes.n_classes == 3 and result.sample_uniques == 0
    assert result.class_size_counts() == {3: 2, 4: 1}
    prosecutor = result.risk.prosecutor
    assert prosecutor.highest == pytest.approx(1 / 3)
    assert prosecutor.average == pytest.approx(0.30)
    assert prosecutor.records_at_risk == pytest.approx(0.60)
    # Without population information the journalist sees the sample itself.
    assert result.risk.journalist.records_at_risk == pytest.approx(0.60)
    diag = result.sensitive_models["diag"].summary()
    assert diag["l_distinct"] == 2
    assert diag["l_entropy"] == pytest.approx(1.7548, abs=5e-5)
    assert diag["recursive_c"] == 4
    assert diag["t_closeness"] == pytest.approx(0.3667, abs=5e-5) and diag["t_distance"] == "equal"
    assert diag["delta_disclosure"] == pytest.approx(1.152, abs=5e-4) and diag["delta_base"] == 2
    assert diag["beta_basic"] == pytest.approx(1.2222, abs=5e-5)
    income = result.sensitive_models["income"].summary()
    assert income["t_closeness"] == pytest.approx(0.3125) and income["t_distance"] == "ordered"


def test_worked_example_journalist_and_marketer_with_a_population_table() -> None:
    result = diagnose(
        worked_example(), ["age", "sex"], population=population_table(), population_count="people", max_risk=0.1
    )
    journalist, marketer = result.risk.journalist, result.risk.marketer
    assert journalist.records_at_risk == pytest.approx(0.30)
    assert journalist.highest == pytest.approx(1 / 6)
    assert journalist.average == pytest.approx(max(3 / 76, 0.07))
    assert marketer.average == pytest.approx(0.07)
    assert result.population.population_size == 100
    assert result.population_uniqueness is not None and result.population_uniqueness.sample_uniques == 0


def test_population_size_and_weights() -> None:
    data = worked_example().assign(w=[10.0] * 10)
    by_size = diagnose(data, ["age", "sex"], population=100)
    assert by_size.population.sampling_fraction == pytest.approx(0.1)
    assert by_size.risk.marketer.average == pytest.approx(3 / 100)  # J / N with F_j = f_j / pi
    by_weights = diagnose(data, ["age", "sex"], weights="w")
    np.testing.assert_allclose(by_weights.population.counts, by_size.population.counts)
    assert by_weights.individual_risk is not None
    assert by_size.individual_risk is None
    by_fraction = diagnose(data, ["age", "sex"], sampling_fraction=0.1)
    assert by_fraction.population.population_size == pytest.approx(100)
    with pytest.raises(ParameterError):
        diagnose(data, ["age", "sex"], population="many")  # type: ignore[arg-type]


def test_contract_supplies_roles_orders_and_identifiers() -> None:
    data = people_table(800)
    contract = people_contract()
    result = diagnose(data, contract=contract)
    assert result.quasi_identifiers == contract.quasi_identifiers
    assert result.sensitive == ("transaction_amount", "diagnosis")
    assert result.identifiers == ("customer_id", "name", "email", "phone")
    explicit = diagnose(data, ["age", "clothing_size"], sensitive=["diagnosis"], contract=contract)
    assert explicit.quasi_identifiers == ("age", "clothing_size")
    assert list(explicit.classes.categories[1]) == ["XS", "S", "M", "L", "XL", "XXL"]
    with pytest.raises(ContractError):
        diagnose(data.assign(clothing_size="XXXL"), contract=contract)


def test_missing_policies_change_the_numbers_as_documented() -> None:
    data = people_table(3000)
    qis = ["age", "sex", "hair_colour"]
    value = diagnose(data, qis)
    wildcard = diagnose(data, qis, missing="wildcard")
    drop = diagnose(data, qis, missing="drop")
    assert drop.classes.n_dropped == int(data[qis].isna().any(axis=1).sum()) > 0
    assert drop.n_records == len(data) - drop.classes.n_dropped
    assert wildcard.k >= value.k
    assert wildcard.risk.prosecutor.average <= value.risk.prosecutor.average
    assert value.population_uniqueness is None


def test_agrees_with_the_classes_on_adult(adult: pd.DataFrame) -> None:
    qis = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]
    result = diagnose(adult, qis, sensitive=["occupation"])
    classes = equivalence_classes(adult, qis)
    assert result.k == classes.k == 1
    assert result.classes.n_classes == classes.n_classes
    below = result.records_below_k()
    sizes = adult.groupby(qis).size()
    for k in range(2, 11):
        assert below[k] == int(sizes[sizes < k].sum())
    payload = result.to_dict()
    assert payload["rows"] == 30162 and payload["k"] == 1
    assert sum(int(size) * count for size, count in payload["class_size_counts"].items()) == 30162
    assert set(payload["sensitive"]["occupation"]) >= {
        "l_distinct", "l_entropy", "recursive_c", "t_closeness", "t_distance", "delta_disclosure", "beta_basic",
        "beta_enhanced", "alpha_k",
    }  # fmt: skip
    assert math.isinf(payload["sensitive"]["occupation"]["recursive_c"])


def test_input_errors() -> None:
    data = worked_example()
    with pytest.raises(ColumnError, match="No quasi-identifier"):
        diagnose(data)
    with pytest.raises(ColumnError, match="Unknown sensitive attribute"):
        diagnose(data, ["age"], sensitive=["diagnosis"])
    with pytest.raises(ParameterError, match="max_risk"):
        diagnose(data, ["age"], max_risk=1.5)
    with pytest.raises(ParameterError, match="k must"):
        diagnose(data, ["age"], k_values=[0])
    with pytest.raises(ContractError):
        diagnose(data, contract=DataContract.from_dict({"field_metadata": [{"field_name": "absent"}]}))


def test_combinations_on_request() -> None:
    result = diagnose(worked_example(), ["age", "sex"], combinations=True)
    assert result.combinations is not None
    assert len(result.combinations.table) == 3
    assert len(result.to_dict()["qi_combinations"]) == 3


def test_warnings_name_roles_missing_in_every_record() -> None:
    data = pd.DataFrame({"a": [None, None, None, None], "b": [1, 2, 1, 2], "s": [None, None, None, None]})
    result = diagnose(data, ["a", "b"], sensitive=["s"])
    assert result.warnings == (
        "Quasi-identifier 'a' is missing in every record: it does not distinguish anyone.",
        "Sensitive attribute 's' is missing in every record: its disclosure measures describe no value.",
    )
    assert result.k == 2  # the warning does not change the numbers: 'a' is one more (missing) value for everyone
    report = result.to_dict()
    assert report["warnings"] == list(result.warnings)
    clean = diagnose(worked_example(), ["age", "sex"], sensitive=["diag"])
    assert clean.warnings == () and clean.to_dict()["warnings"] == []
    # Every key of the report is still there, "warnings" added.
    assert {"rows", "records", "k", "classes", "sample_uniques", "prosecutor", "sensitive", "warnings"} <= set(report)


def test_records_below_k_are_the_records_of_the_smaller_classes() -> None:
    rng = np.random.default_rng(41)
    data = pd.DataFrame({"a": rng.integers(0, 30, 3_000), "b": rng.choice(["x", "y", None], 3_000)})
    result = diagnose(data, ["a", "b"], missing="wildcard", k_values=(1, 2, 3, 5, 50, 10_000))
    below = result.records_below_k()
    assert below == {k: int(result.classes.counts[result.classes.sizes < k].sum()) for k in (1, 2, 3, 5, 50, 10_000)}
    assert below[1] == 0 and below[10_000] == result.n_records and below[50] > 0
