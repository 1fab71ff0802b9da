"""Demo datasets: the dashboard's built-in tables, each the classic case of a story told in one line.

* ``people``: the dashboard's default, a synthetic customer table with direct identifiers, quasi-identifiers
  (including UK postcodes and an ordinal clothing size), sensitive attributes and a few missing values.
* ``uniform``: Mirador Analytics' k-anonymity exercise (Data Science Task Sheet, February 2021): 50,000 rows of eight
  independent categorical columns with three levels each, made by the reference recipe :func:`uniform_table`, so it
  can be regenerated anywhere.
* ``mirador``: the exercise's worked example, eight rows of three such columns whose class-size table is the sheet's
  Table 2 (one class of one record, two of two, one of three): :func:`uniform_table` with
  :data:`MIRADOR_EXAMPLE_SEED`.
* ``strm``: the ten purchases of STRM Privacy's k-member microaggregation example (age, hair colour, clothing size,
  transaction amount; "K-Anonymity (K-Member Micro-Aggregations)", docs.strmprivacy.io), whose published result
  for k = 3 the Fix page's microaggregation reproduces.
* ``five``: the five-person example table of pandas tutorials (first and last name, age, pre- and post-test
  score): every person is unique on the three numbers, so the table is 1-anonymous but not 2-anonymous.
* ``postcodes``: 2,000 synthetic patients by full UK postcode, sex and diagnosis, for the Postcodes page.
* ``adult`` (only when the shared data folder holds it): the ARX version of UCI Adult with ARX's generalization
  hierarchies (:func:`adult_demo`), read, never copied.

Everything but Adult is generated or typed in here, never sampled from real people.
"""

from __future__ import annotations

import string
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from privdash.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType
from privdash.data.tables import read_table
from privdash.errors import ParameterError, check_fraction, check_positive_int
from privdash.transform.hierarchy import Hierarchy, load_hierarchies

__all__ = [
    "ADULT_QUASI_IDENTIFIERS",
    "CLOTHING_SIZES",
    "DEFAULT_DEMO",
    "MIRADOR_EXAMPLE_SEED",
    "DemoDataset",
    "adult_demo",
    "demo_datasets",
    "five_people_table",
    "people_contract",
    "people_table",
    "postcode_patients_table",
    "strm_table",
    "uniform_column_names",
    "uniform_table",
]

UNIFORM_BASE_COLUMNS = ("A", "B", "C", "I", "J", "K", "X", "Y")
CLOTHING_SIZES = ("XS", "S", "M", "L", "XL", "XXL")
#: The built-in dataset a first visit opens.
DEFAULT_DEMO = "people"
#: The seed with which ``uniform_table(8, columns=3, seed=...)`` has the class sizes of Table 2 of Mirador's task
#: sheet: one class of one record, two classes of two, one class of three (found by trying the seeds in order).
MIRADOR_EXAMPLE_SEED = 975
#: The quasi-identifiers of the Adult demo: ARX's example setting, with ``occupation`` the sensitive attribute.
ADULT_QUASI_IDENTIFIERS = (
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "salary-class",
)


def uniform_column_names(columns: int) -> tuple[str, ...]:
    """Column names: A, B, C, I, J, K, X, Y first, then the other capital letters in alphabetical order."""
    extra = [c for c in string.ascii_uppercase if c not in UNIFORM_BASE_COLUMNS]
    names = (*UNIFORM_BASE_COLUMNS, *extra)
    if columns > len(names):
        raise ParameterError(f"columns must be at most {len(names)}, got {columns}.")
    return names[:columns]


def uniform_table(
    rows: int = 50_000,
    *,
    columns: int = 8,
    levels: int = 3,
    seed: int = 0,
    missing_share: float = 0.0,
    missing: float | None = None,
) -> pd.DataFrame:
    """Independent uniform categorical columns, generated exactly as the reference recipe.

    The values are ``numpy.random.seed(seed)`` followed, column by column (A, B, C, I, J, K, X, Y, ...), by
    ``numpy.random.choice(levels, rows)`` with levels ``a1, a2, a3`` for A, ``b1, b2, b3`` for B, and so on (the
    lower-case column letter and 1..``levels``). Missing cells (a share ``missing_share`` of all cells) are chosen
    afterwards with ``numpy.random.default_rng(seed)``, so the non-missing values do not depend on it. ``missing`` is
    the old name of ``missing_share`` (``missing`` is the missing-value policy everywhere else), read for one release
    with a :class:`DeprecationWarning`.

    The legacy global numpy generator is used on purpose (it is what the recipe specifies); its state is saved
    and restored, so calling this function does not disturb other users of ``numpy.random``.
    """
    rows = check_positive_int(rows, "rows")
    columns = check_positive_int(columns, "columns")
    levels = check_positive_int(levels, "levels")
    check_positive_int(seed, "seed", minimum=0)
    if missing is not None:
        warnings.warn(
            "uniform_table(missing=...) is deprecated: the share of missing cells is missing_share",
            DeprecationWarning,
            stacklevel=2,
        )
        missing_share = missing
    share = check_fraction(missing_share, "missing_share", inclusive_one=False)
    names = uniform_column_names(columns)
    saved_state = np.random.get_state()
    try:
        np.random.seed(seed)
        data = {}
        for name in names:
            letter = name.lower()
            values = [f"{letter}{i}" for i in range(1, levels + 1)]
            data[name] = np.random.choice(values, rows)
    finally:
        np.random.set_state(saved_state)
    frame = pd.DataFrame(data)
    if share > 0:
        mask = np.random.default_rng(seed).random((rows, columns)) < share
        frame = frame.astype(object).mask(mask)
    return frame


# --- the synthetic person table ---------------------------------------------------------------------------------

# fmt: off
_FEMALE_NAMES = (
    "Olivia", "Amelia", "Isla", "Ava", "Mia", "Ivy", "Lily", "Isabella", "Rosie", "Sophia", "Grace", "Freya",
    "Ella", "Evie", "Poppy", "Priya", "Aisha", "Fatima", "Zara", "Ama", "Siobhan", "Niamh", "Megan", "Ffion",
    "Margaret", "Susan", "Helen", "Mei",
)
_MALE_NAMES = (
    "Noah", "Oliver", "George", "Arthur", "Muhammad", "Leo", "Harry", "Oscar", "Archie", "Henry", "Theodore",
    "Freddie", "Jack", "Charlie", "Theo", "Alfie", "Jacob", "Thomas", "Finley", "Arlo", "Mohammed", "Ibrahim",
    "Yusuf", "Wei", "Kofi", "Callum", "Rhys", "Dylan", "David", "Robert",
)
_LAST_NAMES = (
    "Smith", "Jones", "Williams", "Taylor", "Brown", "Davies", "Evans", "Wilson", "Thomas", "Johnson",
    "Roberts", "Robinson", "Thompson", "Wright", "Walker", "White", "Edwards", "Hughes", "Green", "Hall",
    "Lewis", "Harris", "Clarke", "Patel", "Jackson", "Wood", "Turner", "Martin", "Cooper", "Hill", "Ward",
    "Morris", "Moore", "Clark", "Lee", "King", "Baker", "Harrison", "Morgan", "Allen", "James", "Scott",
    "Phillips", "Watson", "Davis", "Parker", "Price", "Bennett", "Young", "Griffiths", "Mitchell", "Kelly",
    "Cook", "Carter", "Richardson", "Bailey", "Collins", "Bell", "Shaw", "Murphy", "Miller", "Cox", "Richards",
    "Khan", "Ali", "Ahmed", "Begum", "Singh", "Kaur", "Campbell", "Stewart", "Anderson", "MacDonald", "Reid",
    "Murray", "Ross", "Fraser",
)
# fmt: on

# Postcode districts with the relative size of their share of the customers: a few large urban districts and a
# long tail of small rural ones, including Scottish-border districts whose English part has few residents.
_DISTRICTS = {
    "B1": 30, "B15": 40, "B29": 45, "M1": 25, "M14": 50, "M20": 45, "LS6": 50, "LS17": 30, "BS6": 40, "BS16": 45,
    "NE1": 20, "NE6": 35, "L8": 30, "L18": 25, "S10": 40, "S11": 35, "NG7": 40, "CF10": 30, "CF14": 35, "EH6": 30,
    "G12": 30, "SW1A": 10, "SW11": 45, "E1": 50, "E17": 55, "N1": 40, "N19": 30, "NW3": 35, "SE15": 45, "W2": 30,
    "EC1A": 6, "EC2M": 3, "OX4": 35, "CB1": 30, "BN1": 35, "BN2": 40, "PL4": 30, "EX4": 30, "TR1": 15, "TR20": 6,
    "LA22": 4, "CA10": 4, "CA17": 3, "DL8": 5, "YO62": 5, "HR3": 3, "SY23": 6, "LD1": 3, "LD7": 2, "TD15": 3,
    "TD12": 2, "TD9": 1, "DG16": 1, "NR21": 6, "PE31": 4, "IP17": 5, "TN36": 4, "TQ7": 4, "KW1": 2, "ZE2": 1,
}  # fmt: skip
_DIAGNOSES = {
    "none": 40, "hypertension": 12, "asthma": 9, "diabetes type 2": 8, "depression": 8, "anxiety": 7,
    "back pain": 6, "migraine": 4, "COPD": 2, "cancer": 2, "HIV": 1, "schizophrenia": 1,
}  # fmt: skip
_HAIR = ("black", "dark brown", "brown", "blonde", "red", "grey", "white")


def people_table(rows: int = 5_000, *, seed: int = 2024) -> pd.DataFrame:
    """A synthetic customer table of ``rows`` people (deterministic for a given ``seed``).

    Columns: ``customer_id``, ``name``, ``email``, ``phone`` (direct identifiers); ``age``, ``sex``, ``postcode``
    (full UK unit postcode), ``clothing_size`` (XS < S < M < L < XL < XXL), ``hair_colour`` (quasi-identifiers);
    ``visit_date``; ``transaction_amount`` and ``diagnosis`` (sensitive). About 2% of hair colours and 1% of sexes
    are missing. Distributions are plausible, not calibrated to any population.
    """
    rows = check_positive_int(rows, "rows")
    rng = np.random.default_rng(seed)
    sex = np.where(rng.random(rows) < 0.51, "F", "M").astype(object)
    first = np.where(sex == "F", rng.choice(_FEMALE_NAMES, rows), rng.choice(_MALE_NAMES, rows))
    last = rng.choice(_LAST_NAMES, rows)
    age = np.clip(np.round(rng.gamma(6.0, 7.5, rows) + 16), 18, 99).astype(np.int64)
    districts = np.array(list(_DISTRICTS))
    weights = np.array(list(_DISTRICTS.values()), dtype=float)
    district = rng.choice(districts, rows, p=weights / weights.sum())
    sector = rng.integers(1, 10, rows).astype(str)
    unit_letters = np.array(list("ABDEFGHJLNPQRSTUWXYZ"))
    unit = np.char.add(rng.choice(unit_letters, rows), rng.choice(unit_letters, rows))
    postcode = np.char.add(np.char.add(np.char.add(district.astype(str), " "), sector), unit)
    size_shift = np.where(sex == "M", 1.2, 0.0) + (age > 45) * 0.4
    size_index = np.clip(np.round(rng.normal(1.6 + size_shift, 1.0)), 0, len(CLOTHING_SIZES) - 1).astype(int)
    clothing = np.array(CLOTHING_SIZES)[size_index]
    grey_probability = np.clip((age - 40) / 60, 0, 0.85)
    greying = rng.random(rows) < grey_probability
    hair = np.where(
        greying,
        rng.choice(["grey", "white"], rows, p=[0.75, 0.25]),
        rng.choice(_HAIR[:5], rows, p=[0.22, 0.3, 0.25, 0.17, 0.06]),
    ).astype(object)
    diagnoses = np.array(list(_DIAGNOSES))
    diagnosis_weights = np.array(list(_DIAGNOSES.values()), dtype=float)
    diagnosis = rng.choice(diagnoses, rows, p=diagnosis_weights / diagnosis_weights.sum())
    amount = np.round(rng.lognormal(3.4, 0.9, rows), 2)
    visit = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 366, rows), unit="D")
    suffix = rng.integers(1, 100, rows).astype(str)
    email = np.char.add(np.char.add(np.char.lower(first.astype(str)), "."), np.char.lower(last.astype(str)))
    email = np.char.add(np.char.add(email, suffix), "@example.org")
    phone = np.char.add("07", rng.integers(100_000_000, 999_999_999, rows).astype(str))
    hair[rng.random(rows) < 0.02] = None
    sex[rng.random(rows) < 0.01] = None
    return pd.DataFrame(
        {
            "customer_id": [f"C{i:06d}" for i in range(1, rows + 1)],
            "name": np.char.add(np.char.add(first.astype(str), " "), last.astype(str)),
            "email": email,
            "phone": phone,
            "age": age,
            "sex": sex,
            "postcode": postcode,
            "clothing_size": clothing,
            "hair_colour": hair,
            "visit_date": visit.strftime("%Y-%m-%d"),
            "transaction_amount": amount,
            "diagnosis": diagnosis,
        }
    )


def people_contract() -> DataContract:
    """The data contract of :func:`people_table`."""
    qi, sensitive, identifier, insensitive = (
        ColumnRole.QUASI_IDENTIFIER,
        ColumnRole.SENSITIVE,
        ColumnRole.IDENTIFIER,
        ColumnRole.INSENSITIVE,
    )
    nominal, numerical = StatisticalType.NOMINAL, StatisticalType.NUMERICAL
    return DataContract(
        (
            FieldMetadata("customer_id", identifier, nominal),
            FieldMetadata("name", identifier, nominal),
            FieldMetadata("email", identifier, nominal),
            FieldMetadata("phone", identifier, nominal),
            FieldMetadata("age", qi, numerical),
            FieldMetadata("sex", qi, nominal),
            FieldMetadata("postcode", qi, StatisticalType.POSTCODE),
            FieldMetadata("clothing_size", qi, StatisticalType.ORDINAL, CLOTHING_SIZES),
            FieldMetadata("hair_colour", qi, nominal),
            FieldMetadata("visit_date", insensitive, StatisticalType.DATE),
            FieldMetadata("transaction_amount", sensitive, numerical),
            FieldMetadata("diagnosis", sensitive, nominal),
        )
    )


# --- the classic small examples -------------------------------------------------------------------------------------


def strm_table() -> pd.DataFrame:
    """The ten purchases of STRM Privacy's k-member microaggregation example (the "Before" table of their docs)."""
    return pd.DataFrame(
        {
            "age": [30, 30, 26, 27, 27, 32, 28, 31, 28, 28],
            "hairColor": ["blonde"] * 3 + ["brown"] * 3 + ["black"] * 4,
            "size": ["XL", "XL", "XL", "S", "S", "S", "XL", "XL", "XL", "XL"],
            "transactionAmount": [44, 19, 31, 220, 257, 233, 172, 209, 216, 167],
        }
    )


def strm_contract() -> DataContract:
    """STRM's data contract of the example: every column a quasi-identifier, size ordinal (XS < S < M < L < XL)."""
    qi = ColumnRole.QUASI_IDENTIFIER
    return DataContract(
        (
            FieldMetadata("age", qi, StatisticalType.NUMERICAL),
            FieldMetadata("hairColor", qi, StatisticalType.NOMINAL),
            FieldMetadata("size", qi, StatisticalType.ORDINAL, ("XS", "S", "M", "L", "XL")),
            FieldMetadata("transactionAmount", qi, StatisticalType.NUMERICAL),
        )
    )


def five_people_table() -> pd.DataFrame:
    """The five-person example table of pandas tutorials: names, age, pre-test and post-test score."""
    return pd.DataFrame(
        {
            "first_name": ["Jason", "Molly", "Tina", "Jake", "Amy"],
            "last_name": ["Miller", "Jacobson", "Ali", "Milner", "Cooze"],
            "age": [42, 52, 36, 24, 73],
            "preTestScore": [4, 24, 31, 2, 3],
            "postTestScore": [25, 94, 57, 62, 70],
        }
    )


def postcode_patients_table(rows: int = 2_000, *, seed: int = 11) -> pd.DataFrame:
    """Synthetic patients by full UK postcode: ``patient_id``, ``postcode``, ``sex``, ``age``, ``diagnosis`` (the
    people table's distributions, so rural districts with few residents appear next to large urban ones)."""
    people = people_table(rows, seed=seed)
    return pd.DataFrame(
        {
            "patient_id": [f"P{i:05d}" for i in range(1, rows + 1)],
            "postcode": people["postcode"],
            "sex": people["sex"],
            "age": people["age"],
            "diagnosis": people["diagnosis"],
        }
    )


# --- Adult, from the shared data folder ------------------------------------------------------------------------------


def adult_demo(data_dir: Path | None) -> DemoDataset | None:
    """The ARX version of UCI Adult (``<data_dir>/arx_adult/adult.csv``) with ARX's hierarchies (its
    ``hierarchies`` folder) for the quasi-identifiers, or None when the folder does not hold it."""
    if data_dir is None:
        return None
    folder = Path(data_dir) / "arx_adult"
    table, hierarchies = folder / "adult.csv", folder / "hierarchies"
    if not table.is_file() or not hierarchies.is_dir():
        return None
    qis = ADULT_QUASI_IDENTIFIERS

    def contract() -> DataContract:
        frame = read_table(table)
        return DataContract.for_columns(frame, quasi_identifiers=qis, sensitive=("occupation",))

    return DemoDataset(
        "adult",
        "UCI Adult with ARX's hierarchies (30,162 people)",
        "The census extract every anonymization tool is measured on: 8 quasi-identifiers, occupation sensitive; "
        "ARX's hierarchies drive the least-lossy search to k = 5.",
        lambda: read_table(table),
        contract,
        hierarchies=lambda: load_hierarchies(hierarchies, qis),
        synthetic=False,
    )


# --- the registry -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoDataset:
    """A built-in dataset: a title and its story in one line for the picker, a loader and its contract.

    ``hierarchies`` (optional) loads generalization hierarchies of its quasi-identifiers that the least-lossy
    search uses instead of the defaults per type (ARX's for Adult); ``synthetic`` says whether it was generated.
    """

    name: str
    title: str
    description: str
    load: Callable[[], pd.DataFrame]
    contract: Callable[[], DataContract]
    hierarchies: Callable[[], Mapping[str, Hierarchy]] | None = None
    synthetic: bool = True


def _qis_only(frame: Callable[[], pd.DataFrame], qis: tuple[str, ...]) -> Callable[[], DataContract]:
    return lambda: DataContract.for_columns(frame(), quasi_identifiers=qis)


def _postcode_contract() -> DataContract:
    qi = ColumnRole.QUASI_IDENTIFIER
    return DataContract(
        (
            FieldMetadata("patient_id", ColumnRole.IDENTIFIER, StatisticalType.NOMINAL),
            FieldMetadata("postcode", qi, StatisticalType.POSTCODE),
            FieldMetadata("sex", qi, StatisticalType.NOMINAL),
            FieldMetadata("age", ColumnRole.INSENSITIVE, StatisticalType.NUMERICAL),
            FieldMetadata("diagnosis", ColumnRole.SENSITIVE, StatisticalType.NOMINAL),
        )
    )


def _five_contract() -> DataContract:
    return DataContract.for_columns(
        five_people_table(),
        quasi_identifiers=("age", "preTestScore", "postTestScore"),
        identifiers=("first_name", "last_name"),
    )


def demo_datasets(data_dir: Path | None = None) -> dict[str, DemoDataset]:
    """The built-in demo datasets, by name (the first, :data:`DEFAULT_DEMO`, is the default); Adult is added when
    ``data_dir`` holds it (:func:`adult_demo`)."""
    demos = {
        "people": DemoDataset(
            "people",
            "Customers (synthetic, 5,000 people)",
            "A customer table as it leaves a shop: names, age, sex, UK postcode, clothing size, hair colour, "
            "purchases and a diagnosis; most people are unique on their postcode.",
            people_table,
            people_contract,
        ),
        "uniform": DemoDataset(
            "uniform",
            "Mirador's exercise (50,000 rows, 8 columns of 3 levels)",
            "Eight independent three-level columns give 6,561 combinations for 50,000 rows: even uniform data "
            "leaves classes of one and two (numpy.random.seed(0) reference recipe).",
            lambda: uniform_table(50_000, seed=0),
            _qis_only(lambda: uniform_table(1), UNIFORM_BASE_COLUMNS),
        ),
        "mirador": DemoDataset(
            "mirador",
            f"Mirador's worked example (8 rows, 3 columns, seed {MIRADOR_EXAMPLE_SEED})",
            "The task sheet's class-size table, reproduced: one class of one record, two of two, one of three.",
            lambda: uniform_table(8, columns=3, seed=MIRADOR_EXAMPLE_SEED),
            _qis_only(lambda: uniform_table(1, columns=3), UNIFORM_BASE_COLUMNS[:3]),
        ),
        "strm": DemoDataset(
            "strm",
            "STRM's microaggregation example (10 purchases)",
            "Ten purchases by age, hair colour, size and amount; k-member microaggregation with k = 3 gives STRM's "
            "published result (ages 28.67 and 28.75).",
            strm_table,
            strm_contract,
        ),
        "five": DemoDataset(
            "five",
            "Five test-takers (1- but not 2-anonymous)",
            "Five people and three numbers (age, pre- and post-test score): drop the names and every person is "
            "still unique, so the table is 1-anonymous but not 2-anonymous.",
            five_people_table,
            _five_contract,
        ),
        "postcodes": DemoDataset(
            "postcodes",
            "Patients by postcode (synthetic, 2,000 people)",
            "Full postcodes single people out; districts such as ZE2 or TD9 have too few residents to publish: "
            "the Postcodes page merges them.",
            postcode_patients_table,
            _postcode_contract,
        ),
    }
    adult = adult_demo(data_dir)
    if adult is not None:
        demos["adult"] = adult
    return demos
