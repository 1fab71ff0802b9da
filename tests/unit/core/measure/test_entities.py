"""Person-level classes (several rows per person) against a brute-force oracle and hand-computed examples.

The oracle builds each person's key in plain Python (a frozenset of QI tuples, or a Counter of them for
``multiset``), groups people with equal keys and counts everything over people; the module must give exactly the
same partition, sizes, weight sums and sensitive distributions, through the pandas path and DuckDB's aggregate.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import MISSING_LABEL
from privdash.measure.diagnose import Diagnosis, diagnose
from privdash.measure.entities import PERSON_KEY, EntityClasses, entity_classes
from tests.unit.core.engines.test_aggregate import same

QIS = ["age", "sex", "region"]
MISSING = object()  # the oracle's marker of a missing value


def random_table(seed: int, rows: int = 200, people: int = 110) -> pd.DataFrame:
    """Rows of ``people`` people: few QI values (so tuples repeat), missing values in QIs and the sensitive
    attribute, one weight per person."""
    rng = np.random.default_rng(seed)
    pid = rng.integers(0, people, rows)
    age = rng.choice([20.0, 30.0, 40.0, np.nan], rows, p=[0.6, 0.3, 0.05, 0.05])
    sex = rng.choice(np.array(["F", "M", None], dtype=object), rows, p=[0.5, 0.45, 0.05])
    region = rng.choice(np.array(["north", "south"], dtype=object), rows, p=[0.85, 0.15])
    dx = rng.choice(np.array(["flu", "cold", "asthma", None], dtype=object), rows, p=[0.4, 0.3, 0.25, 0.05])
    person_weight = rng.choice([1.5, 2.0, 10.0, 3.25], people)
    frame = pd.DataFrame({"pid": pid, "age": age, "sex": sex, "region": region, "dx": dx, "weight": person_weight[pid]})
    return frame.sort_values("pid", kind="stable").sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _value(value: Any) -> Any:
    return MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else value


def oracle(frame: pd.DataFrame, key: str = "set", missing: str = "value") -> dict[str, Any]:
    """Everything counted over people, by brute force: each person's key, class members, sizes, weight sums and
    per class the count of people having each sensitive value."""
    rows_of: dict[Any, list[tuple[Any, ...]]] = defaultdict(list)
    values_of: dict[Any, set[Any]] = defaultdict(set)
    weight_of: dict[Any, float] = {}
    for record in frame.to_dict(orient="records"):
        person = record["pid"]
        weight_of[person] = record["weight"]
        qi_tuple = tuple(_value(record[name]) for name in QIS)
        if missing == "drop" and MISSING in qi_tuple:
            continue
        rows_of[person].append(qi_tuple)
        values_of[person].add(_value(record["dx"]))
    keys = {
        person: frozenset(tuples) if key == "set" else frozenset(Counter(tuples).items())
        for person, tuples in rows_of.items()
    }
    members: dict[frozenset[Any], list[Any]] = defaultdict(list)
    for person, person_key in keys.items():
        members[person_key].append(person)
    size_of = {person: len(members[person_key]) for person, person_key in keys.items()}
    class_values = {
        person_key: Counter(value for person in people for value in values_of[person])
        for person_key, people in members.items()
    }
    return {
        "keys": keys,
        "members": members,
        "size_of": size_of,
        "weight_sums": {k: sum(weight_of[p] for p in people) for k, people in members.items()},
        "class_values": class_values,
        "overall": sum(class_values.values(), Counter()),
        "people": len(keys),
        "all_people": len(weight_of),
    }


def assert_matches_oracle(people: EntityClasses, expected: dict[str, Any], *, weights: bool = True) -> None:
    classes = people.classes
    ids = people.person_ids.tolist()
    assert people.people == expected["people"]
    assert len(ids) == expected["all_people"]
    # The same partition of people: each class is one oracle key, each oracle key one class.
    assert classes.n_classes == len(expected["members"])
    for person_key, members in expected["members"].items():
        found = {int(people.person_class[ids.index(person)]) for person in members}
        assert len(found) == 1
        cls = found.pop()
        assert cls >= 0 and classes.sizes[cls] == len(members) == classes.counts[cls]
        if weights:
            assert classes.weight_sums is not None
            assert classes.weight_sums[cls] == pytest.approx(expected["weight_sums"][person_key], rel=1e-12)
        dist = classes.sensitive["dx"]
        labels = [MISSING if label == MISSING_LABEL else label for label in dist.labels.tolist()]
        inside = dist.class_index == cls
        got = {labels[v]: int(c) for v, c in zip(dist.value_index[inside], dist.counts[inside], strict=True)}
        assert got == dict(expected["class_values"][person_key])
        assert dict(zip(labels, dist.overall.tolist(), strict=True)) == dict(expected["overall"])
    for person in ids:
        got = int(people.person_sizes()[ids.index(person)])
        assert got == expected["size_of"].get(person, 0)


def diagnosis_matches_oracle(diagnosis: Diagnosis, expected: dict[str, Any]) -> None:
    """The headline numbers, counted in people."""
    sizes = np.array([len(m) for m in expected["members"].values()])
    per_person = np.array(list(expected["size_of"].values()), dtype=np.float64)
    assert diagnosis.n_records == expected["people"]
    assert diagnosis.k == sizes.min()
    assert diagnosis.sample_uniques == int((sizes == 1).sum())
    assert diagnosis.class_size_counts() == dict(Counter(sizes.tolist()))
    assert diagnosis.risk.prosecutor.highest == 1.0 / sizes.min()
    assert diagnosis.risk.prosecutor.average == pytest.approx(len(sizes) / expected["people"], rel=1e-12)
    assert diagnosis.risk.prosecutor.n_records_at_risk == int((1.0 / per_person > 0.2).sum())
    assert diagnosis.records_below_k()[3] == int((per_person < 3).sum())
    assert diagnosis.entities == expected["all_people"]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("key", ["set", "multiset"])
@pytest.mark.parametrize("missing", ["value", "drop"])
def test_random_tables_equal_the_oracle(seed: int, key: str, missing: str) -> None:
    frame = random_table(seed)
    expected = oracle(frame, key, missing)
    people = entity_classes(frame, "pid", QIS, entity_key=key, sensitive=["dx"], missing=missing, weights="weight")
    assert_matches_oracle(people, expected)
    assert people.rows == len(frame)
    dropped = frame[QIS].isna().any(axis=1)
    assert people.rows_dropped == (int(dropped.sum()) if missing == "drop" else 0)
    # Every row gets its person's class size.
    sizes = people.classes.record_sizes()
    assert sizes.tolist() == [expected["size_of"].get(p, 0) for p in frame["pid"]]


@pytest.mark.parametrize("seed", [11, 12, 13])
@pytest.mark.parametrize("key", ["set", "multiset"])
def test_pandas_and_duckdb_diagnoses_equal_the_oracle(seed: int, key: str, tmp_path: Path) -> None:
    frame = random_table(seed)
    options: dict[str, Any] = {"sensitive": ["dx"], "entity": "pid", "entity_key": key, "weights": "weight"}
    memory = diagnose(frame, QIS, **options, engine="pandas")
    duck = diagnose(frame, QIS, **options, engine="duckdb")
    path = tmp_path / "visits.csv"
    frame.to_csv(path, index=False)
    from_file = diagnose(path, QIS, **options, engine="duckdb")
    expected = oracle(frame, key)
    for diagnosis in (memory, duck, from_file):
        diagnosis_matches_oracle(diagnosis, expected)
    assert memory.engine == "pandas" and duck.engine == from_file.engine == "duckdb"
    left = comparable(memory)
    assert same(left, comparable(duck)) == []
    assert same(left, comparable(from_file)) == []
    assert memory.classes.keys().equals(duck.classes.keys())


def comparable(diagnosis: Diagnosis) -> dict[str, Any]:
    """Every JSON number and every per-class array."""
    from tests.unit.core.engines.test_aggregate import per_class

    out = diagnosis.to_dict()
    out.pop("engine")
    return {"json": out, "per_class": per_class(diagnosis), "keys": diagnosis.classes.keys()[PERSON_KEY].tolist()}


# --- hand-computed -----------------------------------------------------------------------------------------------

VISITS = pd.DataFrame(
    {
        "pid": ["p1", "p1", "p2", "p2", "p3", "p3", "p3", "p4"],
        "age": [30, 31, 30, 31, 30, 31, 31, 40],
        "sex": ["F", "F", "F", "F", "F", "F", "F", "M"],
        "dx": ["a", "a", "b", "b", "a", "b", "c", "d"],
        "w": [5.0, 5.0, 6.0, 6.0, 7.0, 7.0, 7.0, 8.0],
    }
)


def test_set_and_multiset_differ_by_hand() -> None:
    # p1, p2, p3 all visit at (30,F) and (31,F); p3 twice at (31,F). p4 has one visit at (40,M).
    as_set = diagnose(VISITS, ["age", "sex"], sensitive=["dx"], entity="pid", weights="w")
    assert as_set.rows == 8 and as_set.n_records == 4 and as_set.entities == 4
    assert as_set.class_size_counts() == {1: 1, 3: 1} and as_set.k == 1 and as_set.sample_uniques == 1
    assert as_set.classes.keys()[PERSON_KEY].tolist() == ["(age=40, sex=M)", "(age=30, sex=F); (age=31, sex=F)"]
    # Per row, every row is in a class of at least 2 rows, but person p4 is unique and p1-p3 share a class of 3.
    rows = diagnose(VISITS, ["age", "sex"])
    assert rows.k == 1 and rows.class_size_counts() == {1: 1, 3: 1, 4: 1}
    # Weights: F = 5 + 6 + 7 = 18 for the class of three, 8 for p4.
    assert as_set.classes.weight_sums is not None
    assert as_set.classes.weight_sums.tolist() == [8.0, 18.0]
    assert as_set.risk.journalist.highest == 1 / 8
    # Sensitive: class {p1,p2,p3} holds (person, value) pairs a (p1, p3), b (p2, p3), c (p3): 5 pairs.
    dist = as_set.classes.sensitive["dx"]
    assert dist.labels.tolist() == ["a", "b", "c", "d"]
    assert dist.counts.tolist() == [1, 2, 2, 1] and dist.overall.tolist() == [2, 2, 1, 1]
    models = as_set.sensitive_models["dx"]
    assert models.per_class_table()["l_distinct"].tolist() == [1, 3]
    # alpha of the class of three: max count / pairs = 2/5; k stays in people.
    alpha = models.summary()["alpha_k"]
    assert alpha == {"alpha": 1.0, "k": 1}
    assert models.alpha_k.per_class.tolist() == [1.0, 2 / 5]

    as_multiset = diagnose(VISITS, ["age", "sex"], sensitive=["dx"], entity="pid", entity_key="multiset")
    assert as_multiset.class_size_counts() == {1: 2, 2: 1}
    assert as_multiset.classes.keys()[PERSON_KEY].tolist() == [
        "1 x (age=40, sex=M)",
        "1 x (age=30, sex=F); 1 x (age=31, sex=F)",
        "1 x (age=30, sex=F); 2 x (age=31, sex=F)",
    ]
    assert as_multiset.sample_uniques == 2 and as_multiset.risk.prosecutor.average == 3 / 4


def test_json_reports_people_and_rows() -> None:
    out = diagnose(VISITS, ["age", "sex"], entity="pid").to_dict()
    assert out["entity"] == "pid" and out["entity_key"] == "set"
    assert out["entities"] == 4 and out["rows"] == 8 and out["records"] == 4 and out["dropped_rows"] == 0
    assert out["classes"] == 2 and out["sample_uniques"] == 1 and out["sample_uniqueness"] == 0.25
    assert "entity" not in diagnose(VISITS, ["age", "sex"]).to_dict()


def test_drop_and_value_policies_by_hand() -> None:
    frame = pd.DataFrame({"pid": [1, 1, 2, 2, 3], "age": [30, None, 30, 40, None]})
    # value: keys {30, missing}, {30, 40}, {missing}: three unique people.
    valued = diagnose(frame, ["age"], entity="pid")
    assert valued.class_size_counts() == {1: 3}
    # drop: rows with a missing age leave; p1 is {30}, p2 {30, 40}; p3 has no row left.
    dropped = diagnose(frame, ["age"], entity="pid", missing="drop")
    assert dropped.n_records == 2 and dropped.classes.n_dropped == 1 and dropped.entity_rows_dropped == 2
    assert dropped.entities == 3 and dropped.to_dict()["dropped_rows"] == 2
    assert dropped.classes.keys()[PERSON_KEY].tolist() == ["(age=30.0)", "(age=30.0); (age=40.0)"]
    people = entity_classes(frame, "pid", ["age"], missing="drop")
    assert people.classes.record_sizes().tolist() == [1, 1, 1, 1, 0]


def test_contract_entity_is_the_default(tmp_path: Path) -> None:
    from privdash.data.contract import DataContract

    contract = DataContract.for_columns(VISITS, quasi_identifiers=["age", "sex"], entity="pid")
    assert contract.entity == "pid"
    assert diagnose(VISITS, contract=contract).n_records == 4


def test_population_size_counts_people() -> None:
    diagnosis = diagnose(VISITS, ["age", "sex"], entity="pid", population=40)
    # pi = 4 / 40: F = f / pi = 10 f.
    assert diagnosis.population.counts.tolist() == [10.0, 30.0]
    assert diagnosis.risk.journalist.highest == 1 / 10


# --- bad inputs ----------------------------------------------------------------------------------------------------


def test_rows_without_a_person_id_are_an_error_with_their_count() -> None:
    frame = VISITS.assign(pid=["p1", None, "p2", "p2", None, "p3", "p3", None])
    for engine in ("pandas", "duckdb"):
        with pytest.raises(ColumnError, match=r"3 row\(s\) have no value in the person-id column 'pid'"):
            diagnose(frame, ["age", "sex"], entity="pid", engine=engine)


def test_weights_varying_within_a_person_name_the_person() -> None:
    frame = VISITS.assign(w=[5.0, 5.0, 6.0, 6.5, 7.0, 7.0, 7.0, 8.0])
    with pytest.raises(ColumnError, match=r"person 'p2' has rows with weights 6 and 6.5"):
        diagnose(frame, ["age", "sex"], entity="pid", weights="w")


def test_wildcard_is_refused() -> None:
    with pytest.raises(ParameterError, match=r"wildcard.*not defined with a person id"):
        diagnose(VISITS, ["age", "sex"], entity="pid", missing="wildcard")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"quasi_identifiers": ["pid", "age"]}, "person-id column and cannot also be a quasi-identifier"),
        ({"sensitive": ["pid"]}, "cannot also be a sensitive attribute"),
        ({"weights": "pid"}, "cannot also be a weight column"),
    ],
)
def test_the_person_id_cannot_have_another_role(options: dict[str, Any], message: str) -> None:
    arguments = {"quasi_identifiers": ["age", "sex"], **options}
    with pytest.raises(ColumnError, match=message):
        diagnose(VISITS, entity="pid", **arguments)


def test_unknown_person_id_column() -> None:
    for engine in ("pandas", "duckdb"):
        with pytest.raises(ColumnError, match="patient"):
            diagnose(VISITS, ["age", "sex"], entity="patient", engine=engine)


def test_unknown_key_and_unsupported_options() -> None:
    with pytest.raises(ParameterError, match="Unknown person key 'bag'"):
        diagnose(VISITS, ["age", "sex"], entity="pid", entity_key="bag")
    with pytest.raises(ParameterError, match="population table"):
        diagnose(VISITS, ["age", "sex"], entity="pid", population=VISITS)
    with pytest.raises(ParameterError, match="QI-combination analysis"):
        diagnose(VISITS, ["age", "sex"], entity="pid", combinations=True)


@pytest.mark.parametrize("seed", [31, 32])
def test_multiset_classes_split_set_classes(seed: int) -> None:
    frame = random_table(seed)
    as_set = entity_classes(frame, "pid", QIS)
    as_multiset = entity_classes(frame, "pid", QIS, entity_key="multiset")
    pairs = pd.DataFrame({"set": as_set.person_class, "multiset": as_multiset.person_class})
    # Every multiset class lies inside one set class, so no person's class grows.
    assert (pairs.groupby("multiset")["set"].nunique() == 1).all()
    assert (as_multiset.person_sizes() <= as_set.person_sizes()).all()
    assert as_multiset.classes.n_classes > as_set.classes.n_classes


def test_person_sizes_streamed_from_a_file(tmp_path: Path) -> None:
    from privdash.data.tables import read_table
    from privdash.engines.streaming import write_person_sizes
    from privdash.errors import DataReadError

    frame = pd.DataFrame({"pid": [1, 1, 2, 2, 3, 4], "age": [30, None, 30, 40, None, 30]})
    path = tmp_path / "visits.csv"
    frame.to_csv(path, index=False)
    diagnosis = diagnose(path, ["age"], entity="pid", missing="drop", engine="duckdb")
    assert diagnosis.people is not None
    # drop: p1 {30}, p2 {30, 40}, p3 no row left, p4 {30}: sizes 2, 1, in no class, 2.
    written = write_person_sizes(path, diagnosis.people, tmp_path / "out.csv", batch_rows=2)
    assert written.rows == 6 and written.dropped == 1 and written.batches == 3
    out = read_table(tmp_path / "out.csv")
    assert out["class_size"].tolist()[:4] == [2, 2, 1, 1] and math.isnan(out["class_size"].tolist()[4])
    assert out["class_size"].tolist()[5] == 2 and out["prosecutor_risk"].tolist()[:2] == [0.5, 0.5]
    in_memory = entity_classes(frame, "pid", ["age"], missing="drop").classes.record_sizes()
    assert in_memory.tolist() == [2, 2, 1, 1, 0, 2]
    frame.assign(pid=[1, 1, 2, 2, 3, 5]).to_csv(path, index=False)
    with pytest.raises(DataReadError, match=r"person ids .* were not counted"):
        write_person_sizes(path, diagnosis.people, tmp_path / "again.csv")
