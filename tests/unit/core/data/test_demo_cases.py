"""The classic cases among the built-in datasets reproduce what their sources published.

The expected numbers are the sources' own (Mirador's task sheet, STRM Privacy's documentation) or are recounted here
with plain pandas, never taken from privdash.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from privdash.data.contract import ColumnRole, StatisticalType
from privdash.data.demo import (
    ADULT_QUASI_IDENTIFIERS,
    DEFAULT_DEMO,
    MIRADOR_EXAMPLE_SEED,
    adult_demo,
    demo_datasets,
)
from privdash.measure.diagnose import diagnose
from privdash.search.lattice import optimal_generalization
from privdash.transform.hierarchy import build_hierarchy, default_rule
from privdash.transform.microaggregation import microaggregate_with_contract

#: STRM Privacy, "K-Anonymity (K-Member Micro-Aggregations)": the published result of their example for k = 3.
STRM_AFTER = pd.DataFrame(
    {
        "age": [28.666666666666668] * 6 + [28.75] * 4,
        "hairColor": ["blonde"] * 3 + ["brown"] * 3 + ["black"] * 4,
        "size": ["XL"] * 3 + ["S"] * 3 + ["XL"] * 4,
        "transactionAmount": [31.33333333333336] * 3 + [236.66666666666669] * 3 + [191.0] * 4,
    }
)
#: Mirador Analytics, Data Science Task Sheet (February 2021), Table 2: class size -> number of classes.
MIRADOR_TABLE_2 = {1: 1, 2: 2, 3: 1}


def test_strm_microaggregation_gives_their_published_result() -> None:
    demo = demo_datasets()["strm"]
    result = microaggregate_with_contract(demo.load(), demo.contract(), k=3)
    pd.testing.assert_frame_equal(result.data, STRM_AFTER, check_exact=False, rtol=1e-12)
    assert demo.contract()["size"].ordinal_values == ("XS", "S", "M", "L", "XL")


def test_mirador_worked_example_has_the_sheets_class_sizes() -> None:
    frame = demo_datasets()["mirador"].load()
    assert frame.shape == (8, 3)
    sizes = frame.value_counts().value_counts().sort_index()  # class size -> classes, with pandas alone
    assert sizes.to_dict() == MIRADOR_TABLE_2
    assert diagnose(frame, list(frame.columns)).k == 1
    assert demo_datasets()["mirador"].title.endswith(f"seed {MIRADOR_EXAMPLE_SEED})")


def test_mirador_exercise_is_the_reference_table() -> None:
    frame = demo_datasets()["uniform"].load()
    assert frame.shape == (50_000, 8) and frame.nunique().tolist() == [3] * 8
    sizes = frame.value_counts()
    assert len(sizes) <= 3**8 and (sizes == 1).any()  # even uniform data leaves records alone in their class


def test_five_people_are_one_but_not_two_anonymous() -> None:
    demo = demo_datasets()["five"]
    frame, contract = demo.load(), demo.contract()
    qis = ["age", "preTestScore", "postTestScore"]
    assert list(contract.quasi_identifiers) == qis
    assert contract["first_name"].role == ColumnRole.IDENTIFIER
    smallest = int(frame.groupby(qis).size().min())
    assert smallest == 1 and len(frame) == 5  # 1-anonymous (every table is), not 2-anonymous
    assert diagnose(frame, contract=contract).k == smallest


def test_five_people_become_two_anonymous_after_generalization() -> None:
    """The least-lossy search with each QI's default hierarchy (intervals for these numbers) reaches k = 2 without
    removing anyone."""
    demo = demo_datasets()["five"]
    frame, contract = demo.load(), demo.contract()
    qis = list(contract.quasi_identifiers)
    hierarchies = {
        name: build_hierarchy(default_rule(frame[name], contract[name].statistical_type, k=2), frame[name])
        for name in qis
    }
    result = optimal_generalization(frame, hierarchies, quasi_identifiers=qis, k=2, max_suppression=0.0)
    assert len(result.data) == 5
    assert int(result.data.groupby(qis).size().min()) >= 2
    assert diagnose(result.data, qis).k >= 2
    assert result.data[qis].ne(frame[qis]).to_numpy().any()  # some value was generalized


def test_postcode_patients_are_typed_for_the_postcodes_page() -> None:
    demo = demo_datasets()["postcodes"]
    frame, contract = demo.load(), demo.contract()
    contract.validate(frame)
    assert contract["postcode"].statistical_type == StatisticalType.POSTCODE
    assert "postcode" in contract.quasi_identifiers and frame["postcode"].str.match(r"^[A-Z]{1,2}\d").all()


def test_registry_and_adult(data_dir: Path, tmp_path: Path) -> None:
    assert next(iter(demo_datasets())) == DEFAULT_DEMO
    assert "adult" not in demo_datasets() and adult_demo(tmp_path) is None and adult_demo(None) is None
    demos = demo_datasets(data_dir)
    adult = demos["adult"]
    frame = adult.load()
    assert frame.shape == (30_162, 9) and not adult.synthetic
    contract = adult.contract()
    assert contract.quasi_identifiers == ADULT_QUASI_IDENTIFIERS and contract.sensitive == ("occupation",)
    assert adult.hierarchies is not None
    hierarchies = adult.hierarchies()
    assert set(hierarchies) == set(ADULT_QUASI_IDENTIFIERS)
    # ARX's example lattice: the product of the hierarchies' heights is 4,320 nodes.
    product = 1
    for hierarchy in hierarchies.values():
        product *= hierarchy.max_level + 1
    assert product == 4_320
    for name, demo in demos.items():
        assert demo.name == name and demo.description and len(demo.description) < 200


@pytest.mark.parametrize("name", ["people", "uniform", "mirador", "strm", "five", "postcodes"])
def test_every_demo_fits_its_contract(name: str) -> None:
    demo = demo_datasets()[name]
    demo.contract().validate(demo.load())
    assert demo.synthetic
