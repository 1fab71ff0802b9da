from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.data.contract import StatisticalType
from privdash.data.tables import read_table
from privdash.transform.hierarchy import (
    RULE_BUILDERS,
    TOP,
    Hierarchy,
    HierarchyError,
    build_hierarchy,
    canonical_text,
    date_hierarchy,
    default_rule,
    format_arx_hierarchy,
    frequency_hierarchy,
    hierarchy_from_rule,
    interval_hierarchy,
    load_hierarchies,
    masking_hierarchy,
    nice_width,
    parse_arx_hierarchy,
    postcode_hierarchy,
    prefix_hierarchy,
    rare_category_hierarchy,
    read_arx_hierarchy,
    search_hierarchy,
    write_arx_hierarchy,
)

ADULT_COLUMNS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
]


def adult_hierarchy_files(data_dir: Path) -> list[Path]:
    files = sorted((data_dir / "arx_adult" / "hierarchies").glob("*.csv"))
    assert len(files) == 9
    return files


# --- ARX CSV ------------------------------------------------------------------------------------------------------


def test_arx_round_trip_on_every_adult_hierarchy(data_dir: Path, tmp_path: Path) -> None:
    for path in adult_hierarchy_files(data_dir):
        text = path.read_text(encoding="utf-8")
        hierarchy = read_arx_hierarchy(path)
        rows = [line.split(";") for line in text.splitlines() if line]
        assert hierarchy.n_leaves == len(rows)
        assert hierarchy.matrix().tolist() == rows
        # The export is the file itself (one '\n'-terminated line per leaf).
        assert format_arx_hierarchy(hierarchy) == (text if text.endswith("\n") else text + "\n")
        written = write_arx_hierarchy(hierarchy, tmp_path / path.name)
        again = read_arx_hierarchy(written)
        assert again.equals(hierarchy)
        assert again.matrix().tolist() == rows


def test_adult_hierarchy_shapes(data_dir: Path) -> None:
    levels = {
        path.stem.split("_hierarchy_")[1]: read_arx_hierarchy(path).n_levels for path in adult_hierarchy_files(data_dir)
    }
    # SOURCE.md: age 5, education 4, marital-status 3, native-country 3, occupation 3, workclass 3, others 2.
    assert levels == {
        "age": 5,
        "education": 4,
        "marital-status": 3,
        "native-country": 3,
        "occupation": 3,
        "workclass": 3,
        "race": 2,
        "sex": 2,
        "salary-class": 2,
    }


def test_adult_hierarchies_cover_the_data(data_dir: Path) -> None:
    adult = read_table(data_dir / "arx_adult" / "adult.csv")
    hierarchies = load_hierarchies(data_dir / "arx_adult" / "hierarchies", ADULT_COLUMNS)
    for column in ADULT_COLUMNS:
        codes = hierarchies[column].leaf_codes(adult[column])
        assert (codes >= 0).all()
        # Leaves match the data value by value (numbers against their text).
        leaves = np.asarray(hierarchies[column].leaves, dtype=object)[codes]
        assert [str(v) for v in adult[column]] == list(leaves)


def test_parse_quoting_delimiters_and_blank_lines() -> None:
    text = '"a;b";x;*\n\nc;x;*\n'
    hierarchy = parse_arx_hierarchy(text)
    assert hierarchy.matrix().tolist() == [["a;b", "x", "*"], ["c", "x", "*"]]
    assert format_arx_hierarchy(hierarchy) == '"a;b";x;*\nc;x;*\n'
    assert parse_arx_hierarchy("a,x,*\nb,x,*").matrix().tolist() == [["a", "x", "*"], ["b", "x", "*"]]
    single = parse_arx_hierarchy("a\nb\n")
    assert single.n_levels == 1 and single.n_leaves == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("a;x;*\nb;x\n", "same number of levels"),
        ("a;x;*\na;y;*\n", "more than once: 'a'"),
        ("a;x;*\nb;;*\n", "empty cells at level 1"),
        ("a;x;*\nb;x;+\n", r"Inconsistent nesting: 1 value\(s\) at level 1 have more than one parent"),
    ],
)
def test_malformed_hierarchies(text: str, message: str) -> None:
    with pytest.raises(HierarchyError, match=message):
        parse_arx_hierarchy(text, source="h.csv")


def test_nesting_error_names_the_parents() -> None:
    with pytest.raises(HierarchyError, match=r"'x' -> '\*', '\+'"):
        Hierarchy.from_rows([["a", "x", "*"], ["b", "x", "+"]])


def test_binary_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "bin.csv").write_bytes(b"a;\x00;b")
    with pytest.raises(HierarchyError, match="binary"):
        read_arx_hierarchy(tmp_path / "bin.csv")
    with pytest.raises(HierarchyError, match="not found"):
        read_arx_hierarchy(tmp_path / "none.csv")
    (tmp_path / "latin.csv").write_bytes("Müller;M;*\n".encode("cp1252"))
    assert read_arx_hierarchy(tmp_path / "latin.csv").leaves[0] == "Müller"


def test_load_hierarchies_naming(tmp_path: Path) -> None:
    (tmp_path / "age.csv").write_text("1;*\n")
    (tmp_path / "study_hierarchy_zip.csv").write_text("10;1*;*\n")
    (tmp_path / "Sex.csv").write_text("M;*\n")
    found = load_hierarchies(tmp_path, ["age", "zip", "sex"])
    assert found["zip"].n_levels == 3 and found["sex"].leaves[0] == "M"
    with pytest.raises(HierarchyError, match=r"No hierarchy file for 'income'.*files found: Sex.csv, age.csv"):
        load_hierarchies(tmp_path, ["age", "income"])
    (tmp_path / "other_hierarchy_age.csv").write_text("1;*\n")
    assert load_hierarchies(tmp_path, ["age"])["age"].n_levels == 2  # the exact name wins
    (tmp_path / "b_hierarchy_zip.csv").write_text("10;*\n")
    with pytest.raises(HierarchyError, match="Several hierarchy files match column 'zip'"):
        load_hierarchies(tmp_path, ["zip"])
    with pytest.raises(HierarchyError, match="folder not found"):
        load_hierarchies(tmp_path / "nope", ["age"])


# --- matching and generalizing ------------------------------------------------------------------------------------


def test_numbers_match_text_leaves() -> None:
    hierarchy = Hierarchy.from_rows([["39", "35-39", "*"], ["40", "40-44", "*"], ["7", "5-9", "*"]])
    assert hierarchy.leaf_codes(pd.Series([39, 7, 40])).tolist() == [0, 2, 1]
    # A float column (missing values make ints float) and its NaN.
    assert hierarchy.leaf_codes(pd.Series([39.0, np.nan, 40.0])).tolist() == [0, -1, 1]
    assert hierarchy.generalize(pd.Series([39.0, np.nan], name="age"), 1).tolist()[0] == "35-39"
    assert pd.isna(hierarchy.generalize(pd.Series([39.0, np.nan], name="age"), 1).iloc[1])
    # Text data with stray spaces.
    assert hierarchy.leaf_codes(pd.Series([" 39", "40 "])).tolist() == [0, 1]


def test_uncovered_values_are_listed() -> None:
    hierarchy = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    with pytest.raises(HierarchyError, match=r"2 value\(s\) of column 'x' are not leaves.*'c', 'd'"):
        hierarchy.leaf_codes(pd.Series(["a", "c", "d", "c"], name="x"))
    assert hierarchy.codes_for(pd.Series(["a", "c"]), 0, strict=False).tolist() == [0, -2]


def test_level_maps_and_counts() -> None:
    hierarchy = Hierarchy.from_rows(
        [["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"], ["d", "cd", "*"], ["e", "e", "*"]]
    )
    assert hierarchy.leaf_counts(1).tolist() == [2, 2, 1]
    assert hierarchy.leaf_counts(2).tolist() == [5]
    assert hierarchy.parents(0).tolist() == [0, 0, 1, 1, 2]
    assert hierarchy.level_map(1, 2).tolist() == [0, 0, 0]
    assert hierarchy.generalize(pd.Series(["e", "a", "d"]), 1).tolist() == ["e", "ab", "cd"]
    with pytest.raises(HierarchyError, match="between 0 and 2"):
        hierarchy.generalize(pd.Series(["a"]), 3)


def test_dict_round_trip() -> None:
    table = Hierarchy.from_rows([["1", "0-4", "*"], ["6", "5-9", "*"]])
    assert Hierarchy.from_dict(table.to_dict()).equals(table)
    built = interval_hierarchy([1, 6, 12], widths=[5])
    assert built.to_dict() == {"rule": {"builder": "intervals", "widths": [5], "origin": 0, "top": True}}
    assert Hierarchy.from_dict(built.to_dict(), [1, 6, 12]).equals(built)
    with pytest.raises(HierarchyError, match="needs the column's values"):
        Hierarchy.from_dict(built.to_dict())
    with pytest.raises(HierarchyError, match="'rows'"):
        Hierarchy.from_dict({"rows": "x"})


# --- builders -----------------------------------------------------------------------------------------------------


def test_fixed_width_intervals_by_hand() -> None:
    hierarchy = interval_hierarchy(pd.Series([17, 23, 39, 40, 90]), widths=[5, 10, 20])
    assert hierarchy.to_frame().to_numpy().tolist() == [
        [17, "15-19", "10-19", "0-19", TOP],
        [23, "20-24", "20-29", "20-39", TOP],
        [39, "35-39", "30-39", "20-39", TOP],
        [40, "40-44", "40-49", "40-59", TOP],
        [90, "90-94", "90-99", "80-99", TOP],
    ]
    floats = interval_hierarchy([0.5, 1.25, 2.0], widths=[0.5, 1.0], origin=0)
    assert floats.to_frame()["level_1"].tolist() == ["[0.5, 1)", "[1, 1.5)", "[2, 2.5)"]
    with pytest.raises(HierarchyError, match="whole multiple"):
        interval_hierarchy([1, 2], widths=[5, 7])
    with pytest.raises(HierarchyError, match="exactly one"):
        interval_hierarchy([1, 2], widths=[5], bins=[2])
    with pytest.raises(HierarchyError, match="not: 'x'"):
        interval_hierarchy(["1", "x"], widths=[5])


def test_cut_intervals_by_hand() -> None:
    hierarchy = interval_hierarchy([10, 18, 30, 70], cuts=[[18, 25, 65], [25]])
    assert hierarchy.to_frame().to_numpy().tolist() == [
        [10, "<18", "<25", TOP],
        [18, "18-24", "<25", TOP],
        [30, "25-64", ">=25", TOP],
        [70, ">=65", ">=25", TOP],
    ]
    with pytest.raises(HierarchyError, match="must nest"):
        interval_hierarchy([1], cuts=[[18, 25], [30]])
    with pytest.raises(HierarchyError, match="strictly increasing"):
        interval_hierarchy([1], cuts=[[25, 18]])


def test_quantile_intervals_nest_and_balance() -> None:
    rng = np.random.default_rng(7)
    values = pd.Series(rng.integers(0, 1000, 5000))
    hierarchy = interval_hierarchy(values, bins=[8, 4, 2])
    cuts = hierarchy.rule["cuts"]  # type: ignore[index]
    assert len(cuts[0]) == 7 and len(cuts[1]) == 3 and len(cuts[2]) == 1
    assert set(cuts[1]) <= set(cuts[0]) and set(cuts[2]) <= set(cuts[1])
    level1 = hierarchy.generalize(values, 1)
    shares = level1.value_counts(normalize=True)
    assert len(shares) == 8 and shares.between(0.10, 0.15).all()
    # Re-applying the resolved rule reproduces the mapping exactly.
    rebuilt = hierarchy_from_rule(hierarchy.rule, values)  # type: ignore[arg-type]
    assert rebuilt.equals(hierarchy)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-500, 500), min_size=1, max_size=60),
    st.integers(1, 6),
    st.lists(st.integers(2, 4), min_size=0, max_size=3),
)
def test_width_intervals_contain_their_values(values: list[int], base: int, factors: list[int]) -> None:
    widths = [base]
    for factor in factors:
        widths.append(widths[-1] * factor)
    hierarchy = interval_hierarchy(values, widths=widths)
    frame = hierarchy.to_frame()
    for level in range(1, len(widths) + 1):
        bounds = frame[f"level_{level}"].str.extract(r"^(-?\d+)-(-?\d+)$").astype(int)
        leaves = frame["level_0"].astype(int)
        assert ((bounds[0] <= leaves) & (leaves <= bounds[1])).all()
        assert ((bounds[1] - bounds[0] + 1) == widths[level - 1]).all()
    assert hierarchy.n_levels == len(widths) + 1 + (1 if len(frame[f"level_{len(widths)}"].unique()) > 1 else 0)


def test_dates() -> None:
    hierarchy = date_hierarchy(pd.Series(["2024-03-15", "2023-12-01", None, "2024-03-15"]))
    assert hierarchy.to_frame().to_numpy().tolist() == [
        ["2023-12-01", "2023-12", "2023-Q4", "2023", TOP],
        ["2024-03-15", "2024-03", "2024-Q1", "2024", TOP],
    ]
    stamps = pd.Series(pd.to_datetime(["2020-01-31", "2020-07-01"]))
    years = date_hierarchy(stamps, levels=["year"], top=False)
    assert years.n_levels == 2 and years.generalize(stamps, 1).tolist() == ["2020", "2020"]
    assert date_hierarchy(["31/01/2020"], dayfirst=True).to_frame()["level_1"].tolist() == ["2020-01"]
    with pytest.raises(HierarchyError, match="not dates: 'soon'"):
        date_hierarchy(["2020-01-01", "soon"])
    with pytest.raises(HierarchyError, match="ordered subset"):
        date_hierarchy(["2020-01-01"], levels=["year", "month"])


def test_postcodes() -> None:
    hierarchy = postcode_hierarchy(["SW1A 1AA", "sw1a2aa", "M1 1AE", "B33 8TH"])
    assert hierarchy.to_frame().to_numpy().tolist() == [
        ["SW1A 1AA", "SW1A 1", "SW1A", "SW", TOP],
        ["sw1a2aa", "SW1A 2", "SW1A", "SW", TOP],
        ["M1 1AE", "M1 1", "M1", "M", TOP],
        ["B33 8TH", "B33 8", "B33", "B", TOP],
    ]
    districts = postcode_hierarchy(["SW1A 1AA", "M1 1AE"], levels=["district"])
    assert districts.to_frame()["level_1"].tolist() == ["SW1A", "M1"]
    with pytest.raises(HierarchyError, match=r"not full UK postcodes.*'SW1A', 'hello'"):
        postcode_hierarchy(["SW1A 1AA", "SW1A", "hello"])


def test_masking() -> None:
    hierarchy = masking_hierarchy(["12345", "12399", "123"])
    assert hierarchy.to_frame().to_numpy().tolist() == [
        ["12345", "1234*", "123**", "12***", "1****", "*****", TOP],
        ["12399", "1239*", "123**", "12***", "1****", "*****", TOP],
        ["123", "12*", "1**", "***", "***", "***", TOP],
    ]
    same_length = masking_hierarchy([2134, 2139], steps=2, char="#")
    assert same_length.to_frame().to_numpy().tolist() == [[2134, "213#", "21##"], [2139, "213#", "21##"]]
    assert masking_hierarchy(["ab", "cd"]).n_levels == 3  # "**" is already a single value: no extra top


def test_rare_categories() -> None:
    values = pd.Series([*"aaabbcd", None])
    hierarchy = rare_category_hierarchy(values, min_count=2)
    assert hierarchy.to_frame().to_numpy().tolist() == [
        ["a", "a", TOP],
        ["b", "b", TOP],
        ["c", "Other", TOP],
        ["d", "Other", TOP],
    ]
    # Re-applied to new data: anything not kept becomes Other.
    rebuilt = hierarchy.for_values(pd.Series(["a", "z", "b"]))
    assert rebuilt.generalize(pd.Series(["a", "z", "b"]), 1).tolist() == ["a", "Other", "b"]
    with pytest.raises(HierarchyError, match="'Other' is a frequent value"):
        rare_category_hierarchy(["Other", "Other", "x"], min_count=2)
    numbers = rare_category_hierarchy([1, 1, 2], min_count=2, other="rare")
    assert numbers.generalize(pd.Series([1, 2]), 1).tolist() == ["1", "rare"]


def test_unknown_rule() -> None:
    with pytest.raises(HierarchyError, match="Unknown hierarchy builder 'magic'"):
        hierarchy_from_rule({"builder": "magic"}, [1])
    with pytest.raises(HierarchyError, match="lacks the parameter 'widths'"):
        hierarchy_from_rule({"builder": "intervals"}, [1])
    with pytest.raises(HierarchyError, match="no non-missing values"):
        interval_hierarchy([None, None], widths=[5])


@pytest.mark.parametrize(
    "values",
    [
        [" a", "b ", "c"],
        ["EC1A 1BB", "B1 1BA"],
        [1, 2, -3],
        [1.0, 2.5],
        ["a", None],
        [True, False],
        [1, "a"],
    ],
)
def test_canonical_text_fast_paths_match_the_per_value_rule(values: list) -> None:
    from privdash.transform.hierarchy import _canonical

    for index in (pd.Index(values), pd.Index(values, dtype=object)):
        assert list(canonical_text(index)) == [_canonical(v) for v in index]


# --- rule settings and defaults --------------------------------------------------------------------------------------


def test_rule_settings_build_the_builders_hierarchies() -> None:
    ages = pd.Series([23, 37, 41, 58, None])
    built = build_hierarchy({"builder": "intervals", "widths": [5, 10]}, ages)
    assert built.equals(interval_hierarchy(ages, widths=[5, 10]))
    assert built.rule == interval_hierarchy(ages, widths=[5, 10]).rule
    quantiles = build_hierarchy({"builder": "quantiles", "bins": [2]}, ages)
    assert quantiles.rule is not None and quantiles.rule["builder"] == "cuts"
    days = pd.Series(["2024-01-05", "2024-05-17"])
    assert build_hierarchy({"builder": "dates", "levels": ["year"]}, days).equals(date_hierarchy(days, levels=["year"]))
    codes = pd.Series(["SW1A 1AA", "M1 1AE"])
    assert build_hierarchy({"builder": "postcodes", "levels": ["area"]}, codes).max_level == 2
    assert build_hierarchy({"builder": "masking", "steps": 2}, codes).equals(masking_hierarchy(codes, steps=2))
    names = pd.Series(["a"] * 5 + ["b"])
    assert build_hierarchy({"builder": "rare", "min_count": 5}, names).equals(
        rare_category_hierarchy(names, min_count=5)
    )
    with pytest.raises(HierarchyError, match="needs a 'builder'"):
        build_hierarchy({"builder": "cuts", "cuts": [[1]]}, ages)
    with pytest.raises(HierarchyError, match="unknown setting"):
        build_hierarchy({"builder": "masking", "steps": 2, "char": "#"}, codes)
    assert len(RULE_BUILDERS) == 8
    assert build_hierarchy({"builder": "frequency"}, names).equals(frequency_hierarchy(names))
    assert build_hierarchy({"builder": "prefix", "lengths": [1]}, codes).equals(prefix_hierarchy(codes, lengths=[1]))
    coded = build_hierarchy({"builder": "intervals", "widths": [10], "high": 40}, ages)
    assert coded.equals(interval_hierarchy(ages, widths=[10], high=40))


def test_nice_width_is_round() -> None:
    assert nice_width(pd.Series(range(0, 100))) == 5
    assert nice_width(pd.Series([0.0, 0.37])) == 0.02
    assert nice_width(pd.Series([3, 4])) == 1  # whole numbers keep a whole width
    assert nice_width(pd.Series([7, 7])) == 1 and nice_width(pd.Series(["x"])) == 1


def test_default_rules_per_type() -> None:
    ages = pd.Series(range(18, 98))
    assert default_rule(ages, StatisticalType.NUMERICAL) == {"builder": "intervals", "widths": [5, 10, 20]}
    assert default_rule(ages, "DATE")["builder"] == "dates"
    postcodes = {"builder": "postcodes", "levels": ["sector", "district", "area"]}
    assert default_rule(ages, StatisticalType.POSTCODE) == postcodes
    # Interval labels in a numerical column, or a nominal one: frequency groups (k no longer matters).
    labels = pd.Series(["20-29", "30-39"])
    assert default_rule(labels, StatisticalType.NUMERICAL) == {"builder": "frequency"}
    assert default_rule(labels, StatisticalType.NOMINAL, k=8) == {"builder": "frequency"}
    icd = pd.Series(["A01.1", "A01.2", "A02.0", "B20.1", "B21.3"])
    assert default_rule(icd, StatisticalType.NOMINAL) == {"builder": "prefix", "lengths": [3, 2]}  # A0* = A*


def test_search_hierarchy_falls_back_to_frequency_groups() -> None:
    ages = pd.Series(range(18, 98))
    assert search_hierarchy(ages, StatisticalType.NUMERICAL, 5).equals(interval_hierarchy(ages, widths=[5, 10, 20]))
    not_dates = pd.Series(["soon", "later"])
    assert search_hierarchy(not_dates, StatisticalType.DATE, 5).equals(frequency_hierarchy(not_dates))
