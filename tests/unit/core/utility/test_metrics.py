from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.data.tables import read_table
from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.targets import PrivacyTargets
from privdash.transform.generalization import generalize
from privdash.transform.hierarchy import Hierarchy, HierarchyError, load_hierarchies
from privdash.utility.metrics import (
    SUPPRESSED_LABEL,
    Metric,
    cells_changed,
    classifier_accuracy,
    information_loss,
    information_loss_with_baseline,
    utility_report,
    value_distributions,
)

SEX = Hierarchy.from_rows([["M", "*"], ["F", "*"]])
ZIP = Hierarchy.from_rows([["1301", "130*", "1***"], ["1302", "130*", "1***"], ["1410", "141*", "1***"]])
HIERARCHIES = {"sex": SEX, "zip": ZIP}


def tiny() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sex": ["M", "M", "F", "F", "M", "M", "F", "F"],
            "zip": ["1301", "1302", "1301", "1302", "1410", "1410", "1410", "1301"],
        }
    )


def test_metric_names() -> None:
    assert Metric.parse("granularity") is Metric.LOSS
    assert Metric.parse("Non_Uniform_Entropy") is Metric.ENTROPY
    assert Metric.parse("dm") is Metric.DISCERNIBILITY
    with pytest.raises(ParameterError, match="Unknown metric"):
        Metric.parse("fast")


def test_full_domain_with_suppression_by_hand() -> None:
    data = tiny()
    published = generalize(data, {"sex": 0, "zip": 1}, HIERARCHIES).data
    kept = np.array([0, 1, 2, 3, 4, 5, 7])  # the lone (F, 141*) is suppressed
    loss = information_loss(data, published.iloc[kept], HIERARCHIES, kept_rows=kept)
    assert loss.suppressed == 1 and loss.records == 8 and loss.classes == 3
    # sex: (7 * 1/2 + 1)/8 = 0.5625 -> (0.5625 - 1/2)/(1/2); zip: (5 * 2/3 + 2 * 1/3 + 1)/8 -> (x - 1/3)/(2/3).
    assert loss.per_column["loss"].tolist() == pytest.approx([0.125, 0.4375])
    assert loss.loss == pytest.approx(0.28125)
    assert loss.per_column["precision"].tolist() == pytest.approx([1 / 8, 4.5 / 8])
    assert loss.discernibility == 2**2 + 3**2 + 2**2 + 8 * 1
    assert loss.aecs == 8 / 4
    assert loss.entropy == pytest.approx(3 * math.log2(5 / 3) + 2 * math.log2(5 / 2))
    assert loss.per_column["levels"].tolist() == ["0", "1"]


def test_suppression_step_of_entropy_by_hand() -> None:
    data = tiny()
    published = generalize(data, {"sex": 0, "zip": 0}, HIERARCHIES).data
    kept = np.array([0, 1, 2, 3])  # suppress rows 4..7: (M,1410) x2, (F,1410), (F,1301)
    loss = information_loss(data, published.iloc[kept], HIERARCHIES, kept_rows=kept)
    # sex: suppressed M, M, F, F -> 4 * log2(4/2); zip: 1410 x3, 1301 x1 -> 3 log2(4/3) + log2(4).
    assert loss.per_column["entropy"].tolist() == pytest.approx([4.0, 3 * math.log2(4 / 3) + 2])
    assert loss.discernibility == 4 * 1 + 8 * 4
    assert loss.aecs == 8 / 5
    assert loss.precision == pytest.approx(0.5)


def test_local_recoding_by_hand() -> None:
    data = tiny()
    published = data.copy()
    published.loc[:3, "zip"] = "130*"  # first four records at level 1, the rest at level 0
    loss = information_loss(data, published, HIERARCHIES)
    assert loss.per_column["levels"].tolist() == ["0", "0, 1"]
    # zip shares 4 * 2/3 + 4 * 1/3 = 4 -> 0.5 -> (0.5 - 1/3) / (2/3) = 0.25.
    assert loss.loss == pytest.approx(0.125)
    assert loss.precision == pytest.approx(0.125)
    # ARX counts frequencies among the records at level >= 1 only: 1301 x2, 1302 x2 -> 130* (4): 4 bits.
    assert loss.entropy == pytest.approx(4.0)
    assert loss.discernibility == 4 + 4 + 4 + 1 + 1 and loss.aecs == 8 / 5


def test_identity_is_the_baseline() -> None:
    data = tiny()
    loss = information_loss(data, data, HIERARCHIES)
    assert (loss.loss, loss.precision, loss.entropy) == (0.0, 0.0, 0.0)
    sizes = equivalence_classes(data, ["sex", "zip"]).sizes
    assert loss.discernibility == float((sizes**2).sum()) and loss.aecs == 8 / len(sizes)


def test_missing_values_cost_nothing_unless_suppressed() -> None:
    data = tiny().assign(sex=["M", None, "F", "F", "M", "M", "F", "F"])
    generalized = generalize(data, {"sex": 1, "zip": 0}, HIERARCHIES).data
    loss = information_loss(data, generalized, HIERARCHIES)
    # 7 records at share 1 (sex '*'), the missing one at 1/D: (7 + 1/2)/8 -> (x - 1/2)/(1/2) = 0.875.
    assert loss.per_column["loss"].iloc[0] == pytest.approx(0.875)
    assert loss.per_column["precision"].iloc[0] == pytest.approx(7 / 8)
    # M x3 and F x4 generalized to '*' (7 records at level 1); the missing value stays at level 0.
    assert loss.per_column["entropy"].iloc[0] == pytest.approx(3 * math.log2(7 / 3) + 4 * math.log2(7 / 4))
    suppressed = information_loss(data, data.iloc[[0, 2, 3, 4, 5, 6, 7]], HIERARCHIES, kept_rows=[0, 2, 3, 4, 5, 6, 7])
    assert suppressed.per_column["loss"].iloc[0] == pytest.approx((7 / 2 + 1) / 8 * 2 - 1)
    # The suppressed missing value is alone among the suppressed: log2(1/1) = 0.
    assert suppressed.per_column["entropy"].iloc[0] == 0.0


def test_adult_entropy_matches_arx(data_dir: Path, adult: pd.DataFrame) -> None:
    """ARX TestAnonymizationKAnonymity: monotone non-uniform entropy 255559.85455731067 at (1,0,1,1,3,2,2,0,1)."""
    columns = list(adult.columns)
    hierarchies = load_hierarchies(data_dir / "arx_adult" / "hierarchies", columns)
    levels = dict(zip(columns, (1, 0, 1, 1, 3, 2, 2, 0, 1), strict=True))
    published = generalize(adult, levels, hierarchies).data
    loss = information_loss(adult, published, hierarchies)
    assert loss.entropy == pytest.approx(255559.85455731067, rel=1e-12)
    assert loss.per_column.set_index("column").loc["age", "loss"] == 0.0
    assert loss.per_column.set_index("column").loc["education", "loss"] == 1.0


def test_errors() -> None:
    data = tiny()
    with pytest.raises(ParameterError, match="pass kept_rows"):
        information_loss(data, data.iloc[:3], HIERARCHIES)
    with pytest.raises(ParameterError, match="increasing positions"):
        information_loss(data, data.iloc[:2], HIERARCHIES, kept_rows=[1, 0])
    wrong = data.assign(zip=["141*"] * 8)
    with pytest.raises(HierarchyError, match=r"Column 'zip': 5 published value\(s\) are not a generalization"):
        information_loss(data, wrong, HIERARCHIES)
    with pytest.raises(ColumnError):
        information_loss(data, data.drop(columns="zip"), HIERARCHIES)


def test_value_distributions() -> None:
    data = tiny()
    published = generalize(data, {"sex": 1, "zip": 1}, HIERARCHIES).data.iloc[:6]
    table = value_distributions(data, published, ["sex", "zip"], kept_rows=np.arange(6))
    zip_rows = table[table["column"] == "zip"].set_index("value")
    assert zip_rows.loc["1301", "original"] == 3 and zip_rows.loc["1301", "transformed"] == 0
    assert zip_rows.loc["130*", "transformed"] == 4 and zip_rows.loc["141*", "transformed"] == 2
    assert zip_rows.loc[SUPPRESSED_LABEL, "transformed"] == 2
    for _, group in table.groupby("column"):
        assert group["original_share"].sum() == pytest.approx(1.0)
        assert group["transformed_share"].sum() == pytest.approx(1.0)
    with_missing = value_distributions(data.assign(sex=[None] + ["M"] * 7), data, ["sex"])
    assert with_missing.set_index("value").loc["(missing)", "original"] == 1


@pytest.fixture(scope="module")
def adult_subset(data_dir: Path) -> pd.DataFrame:
    return read_table(data_dir / "arx_adult" / "adult_subset.csv")


def test_classifier_accuracy(data_dir: Path, adult_subset: pd.DataFrame) -> None:
    features = ["sex", "age", "race", "marital-status", "education", "workclass"]
    hierarchies = load_hierarchies(data_dir / "arx_adult" / "hierarchies", features)
    same = classifier_accuracy(adult_subset, adult_subset, target="salary-class", features=features)
    assert same.original_accuracy == same.transformed_accuracy
    assert same.original_accuracy > same.baseline_accuracy + 0.05
    assert same.train_records + same.test_records == len(adult_subset)
    # Everything generalized to '*': the model can only predict the majority class.
    top = {c: hierarchies[c].max_level for c in features}
    flat = generalize(adult_subset, top, hierarchies).data
    blind = classifier_accuracy(adult_subset, flat, target="salary-class", features=features, model="tree")
    assert blind.transformed_accuracy == pytest.approx(blind.baseline_accuracy)
    assert blind.original_accuracy > blind.transformed_accuracy
    # Suppressed records are in neither part; the split of the kept records follows the original split.
    result = generalize(adult_subset, {"age": 2}, hierarchies, suppress=PrivacyTargets(k=20), quasi_identifiers=["age"])
    partial = classifier_accuracy(
        adult_subset, result.data, target="salary-class", features=features, kept_rows=result.kept_rows, seed=3
    )
    assert partial.transformed_train_records + partial.transformed_test_records == len(result.data)
    with pytest.warns(DeprecationWarning, match="seed"):  # the old keyword, read for one release
        again = classifier_accuracy(
            adult_subset,
            result.data,
            target="salary-class",
            features=features,
            kept_rows=result.kept_rows,
            random_state=3,
        )
    assert again == partial and again.seed == 3


def test_classifier_errors(adult_subset: pd.DataFrame) -> None:
    with pytest.raises(ColumnError, match="cannot also be a feature"):
        classifier_accuracy(adult_subset, adult_subset, target="sex", features=["sex", "age"])
    single = adult_subset.assign(**{"salary-class": "x"})
    with pytest.raises(ParameterError, match="at least two values"):
        classifier_accuracy(single, single, target="salary-class", features=["age"])
    with pytest.raises(ParameterError, match="Unknown classifier"):
        classifier_accuracy(adult_subset, adult_subset, target="salary-class", features=["age"], model="svm")


def test_utility_report(data_dir: Path, adult_subset: pd.DataFrame) -> None:
    qis = ["sex", "age", "race"]
    hierarchies = load_hierarchies(data_dir / "arx_adult" / "hierarchies", qis)
    result = generalize(
        adult_subset, {"sex": 0, "age": 2, "race": 1}, hierarchies, suppress=PrivacyTargets(k=5), quasi_identifiers=qis
    )
    report = utility_report(
        adult_subset, result.data, hierarchies, kept_rows=result.kept_rows, target="salary-class", model="tree"
    )
    table = report.metrics_table().set_index("metric")
    assert table.loc["loss", "before"] == 0.0 and table.loc["loss", "after"] > 0.0
    assert table.loc["aecs", "after"] > table.loc["aecs", "before"]
    assert report.after.suppressed == result.summary["records_suppressed"]
    assert set(report.distributions["column"]) == set(qis)
    assert report.classifier is not None and report.classifier.features == tuple(qis)


# --- cells changed ---------------------------------------------------------------------------------------------------


def test_cells_changed_compares_numbers_as_numbers_and_text_as_text() -> None:
    original = pd.DataFrame(
        {"age": [39, 40, 41, None], "sex": ["M", "F", None, "F"], "id": ["a", "b", "c", "d"], "gone": [1, 2, 3, 4]}
    )
    transformed = pd.DataFrame(
        {"age": [39.0, 45.0, None, None], "sex": ["M", "F", "F", None], "id": ["a", "b", "c", "d"], "new": [0] * 4}
    )
    table = cells_changed(original, transformed).set_index("column")
    assert list(table.index) == ["age", "sex", "id"]  # columns of both tables, in the published order
    # 40 -> 45 and 41 -> missing; 39 == 39.0 and missing on both sides are unchanged.
    assert table.loc["age", "changed"] == 2 and table.loc["age", "share"] == 0.5
    assert table.loc["sex", "changed"] == 2  # a cell filled in and a cell blanked
    assert table.loc["id", "changed"] == 0


def test_cells_changed_follows_the_kept_rows() -> None:
    original = pd.DataFrame({"zip": ["1301", "1302", "1410", "1411"]})
    transformed = pd.DataFrame({"zip": ["130*", "1410"]})
    table = cells_changed(original, transformed, kept_rows=[1, 2])
    assert table["changed"].tolist() == [1] and table["share"].tolist() == [0.5]
    with pytest.raises(ParameterError, match="kept_rows"):
        cells_changed(original, transformed)
    empty = cells_changed(original.iloc[:0], transformed.iloc[:0])
    assert empty["changed"].tolist() == [0] and empty["share"].tolist() == [0.0]


def test_cells_changed_compares_text_columns_directly_with_the_same_counts() -> None:
    rng = np.random.default_rng(4)
    values = np.array(["a", "b", " b", "10", "1e1", "nan"], dtype=object)
    before = pd.Series(rng.choice(values, 400), dtype=object)
    after = before.copy()
    after[rng.random(400) < 0.3] = rng.choice(values, 400)[:1]
    before[rng.random(400) < 0.1] = None
    after[rng.random(400) < 0.1] = None
    texts = pd.DataFrame({"v": before.astype("str")}), pd.DataFrame({"v": after.astype("str")})
    objects = pd.DataFrame({"v": before}), pd.DataFrame({"v": after})
    assert isinstance(texts[0]["v"].dtype, pd.StringDtype)
    direct = cells_changed(*texts)
    expected = cells_changed(*objects)  # compared through str()
    pd.testing.assert_frame_equal(direct, expected)
    assert 0 < direct["changed"].iloc[0] < 400


@pytest.mark.parametrize("level", [0, 1, 2])
def test_information_loss_with_baseline_equals_two_separate_calls(level: int) -> None:
    rng = np.random.default_rng(level)
    original = pd.DataFrame(
        {
            "sex": rng.choice(np.array(["M", "F", None], dtype=object), 300),
            "zip": rng.choice(["1301", "1302", "1410"], 300),
        }
    )
    published = original.copy()
    published["zip"] = ZIP.generalize(original["zip"], level)
    kept = np.flatnonzero(rng.random(300) < 0.9)
    published = published.iloc[kept].reset_index(drop=True)
    before, after = information_loss_with_baseline(original, published, HIERARCHIES, kept_rows=kept)
    assert before.to_dict() == information_loss(original, original, HIERARCHIES).to_dict()
    assert after.to_dict() == information_loss(original, published, HIERARCHIES, kept_rows=kept).to_dict()
    assert before.loss == 0.0 and after.suppressed == 300 - len(kept)


@pytest.mark.parametrize("change", ["copy", "generalize", "suppress", "both"])
def test_class_metrics_equal_those_of_the_equivalence_classes(change: str) -> None:
    rng = np.random.default_rng(7)
    original = pd.DataFrame(
        {
            "sex": pd.Series(rng.choice(np.array(["M", "F", None], dtype=object), 500)).astype("str"),
            "zip": rng.choice(["1301", "1302", "1410"], 500),
        }
    )
    published = original.copy()  # equal values: published as they are
    if change in ("generalize", "both"):
        published["zip"] = ZIP.generalize(original["zip"], 1)
    kept = np.arange(500)
    if change in ("suppress", "both"):
        kept = np.flatnonzero(rng.random(500) < 0.8)
        published = published.iloc[kept].reset_index(drop=True)
    loss = information_loss(original, published, HIERARCHIES, kept_rows=kept)
    classes = equivalence_classes(published, ["sex", "zip"])
    suppressed = 500 - len(kept)
    assert loss.classes == classes.n_classes
    assert loss.discernibility == float((classes.sizes.astype(float) ** 2).sum() + 500.0 * suppressed)
    assert loss.aecs == 500 / (classes.n_classes + (1 if suppressed else 0))
    assert (loss.loss == 0.0) is (change == "copy")
