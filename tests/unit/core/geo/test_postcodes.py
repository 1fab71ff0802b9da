from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.errors import ColumnError, DataReadError, ParameterError, PrivdashError
from privdash.geo.postcodes import (
    SUPPRESSED_ZIP3,
    Neighbours,
    PostcodeGeneralization,
    Strategy,
    default_data_dir,
    fails_threshold,
    generalize_postcodes,
    neighbours_from_doogal,
    normalize_postcode,
    parse_postcodes,
    parse_zip_codes,
    population_counts,
    population_from_frame,
    postcode_order,
    read_population,
    recode_postcodes,
    unit_populations,
)
from privdash.measure.classes import equivalence_classes
from privdash.transform.steps import Recipe, Step, apply_recipe, apply_step, registered_steps

EW = ("uk_postcode_population_ew2011_outward", "ew2011_outward_code_population.csv")
DOOGAL = ("uk_postcode_districts_doogal", "postcode_districts.csv")
ZCTA = ("us_zcta2010_population", "2010-pop-by-zcta.csv")


@pytest.fixture(scope="module")
def ew(data_dir: Path):
    return read_population(data_dir.joinpath(*EW))


@pytest.fixture(scope="module")
def doogal(data_dir: Path):
    return read_population(data_dir.joinpath(*DOOGAL))


@pytest.fixture(scope="module")
def zcta(data_dir: Path):
    return read_population(data_dir.joinpath(*ZCTA))


def districts(populations: dict[str, int]):
    return population_from_frame(
        pd.DataFrame({"postcode": list(populations), "population": list(populations.values())}), source="test"
    )


def pairs(*edges: tuple[str, str]) -> pd.DataFrame:
    return pd.DataFrame(edges, columns=["a", "b"])


# --- parsing -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "unit", "sector", "district", "area"),
    [
        ("B  1 1BA", "B1 1BA", "B1 1", "B1", "B"),
        ("B1  1BA", "B1 1BA", "B1 1", "B1", "B"),
        ("EC1A1BB", "EC1A 1BB", "EC1A 1", "EC1A", "EC"),
        ("ec1a 1bb", "EC1A 1BB", "EC1A 1", "EC1A", "EC"),
        ("  sw1a\t2aa ", "SW1A 2AA", "SW1A 2", "SW1A", "SW"),
        ("SW1A\u00a02AA", "SW1A 2AA", "SW1A 2", "SW1A", "SW"),
        ("AL101AA", "AL10 1AA", "AL10 1", "AL10", "AL"),
        ("TD151XY", "TD15 1XY", "TD15 1", "TD15", "TD"),
        ("W1A 0AX", "W1A 0AX", "W1A 0", "W1A", "W"),
        ("M1 1AE", "M1 1AE", "M1 1", "M1", "M"),
        ("DN55 1PT", "DN55 1PT", "DN55 1", "DN55", "DN"),
        ("W1M 1AA", "W1M 1AA", "W1M 1", "W1M", "W"),
        ("GIR 0AA", "GIR 0AA", "GIR 0", "GIR", "GIR"),
    ],
)
def test_units_in_any_spacing_and_case(raw: str, unit: str, sector: str, district: str, area: str) -> None:
    row = parse_postcodes([raw]).iloc[0]
    assert row["level"] == "unit"
    assert (row["postcode"], row["unit"], row["sector"], row["district"], row["area"]) == (
        unit,
        unit,
        sector,
        district,
        area,
    )
    assert normalize_postcode(raw) == unit


@pytest.mark.parametrize(
    ("raw", "level", "normalized", "district", "area"),
    [
        ("EC1A 1", "sector", "EC1A 1", "EC1A", "EC"),
        ("B1 1", "sector", "B1 1", "B1", "B"),
        ("b 1  1", "sector", "B1 1", "B1", "B"),
        ("B1\u00a01", "sector", "B1 1", "B1", "B"),
        ("TD15", "district", "TD15", "TD15", "TD"),
        ("B11", "district", "B11", "B11", "B"),
        ("B 11", "district", "B11", "B11", "B"),
        ("ec1a", "district", "EC1A", "EC1A", "EC"),
        ("EC", "area", "EC", None, "EC"),
        ("b", "area", "B", None, "B"),
    ],
)
def test_coarser_levels(raw: str, level: str, normalized: str, district: str | None, area: str) -> None:
    row = parse_postcodes([raw]).iloc[0]
    assert row["level"] == level and row["postcode"] == normalized and row["area"] == area
    assert (row["district"] if pd.notna(row["district"]) else None) == district
    assert pd.isna(row["unit"])


@pytest.mark.parametrize(
    "raw",
    [
        "Q1 1AA",  # Q never starts a postcode
        "AI1 1AA",  # I never second
        "B1 1CA",  # C never in the inward letters
        "B1 1AI",
        "B1 1A",
        "B1 1BAA",
        "B111 1AA",
        "TD151",  # outward + sector digit without a space: not guessed
        "12345",
        "",
        "   ",
        "NPT",
        "XYZ",
        "1AA",
    ],
)
def test_invalid_postcodes_are_reported_not_guessed(raw: str) -> None:
    row = parse_postcodes([raw]).iloc[0]
    assert row["level"] == "invalid"
    assert row[["postcode", "area", "district", "sector", "unit"]].isna().all()
    with pytest.raises(ParameterError, match="not a valid UK postcode"):
        normalize_postcode(raw)


def test_parse_keeps_index_and_marks_missing() -> None:
    values = pd.Series(["B1 1BA", None, "nonsense", "B1 1BA", np.nan], index=[10, 20, 30, 40, 50])
    parsed = parse_postcodes(values)
    assert parsed.index.tolist() == [10, 20, 30, 40, 50]
    assert parsed["level"].astype(str).tolist() == ["unit", "missing", "invalid", "unit", "missing"]
    assert parsed["district"].tolist()[0] == "B1" and parsed["district"].tolist()[3] == "B1"


@st.composite
def postcode_parts(draw: st.DrawFn) -> tuple[str, str]:
    first = draw(st.sampled_from(list("ABCDEFGHIJKLMNOPRSTUWYZ")))
    second = draw(st.sampled_from(["", *"ABCDEFGHKLMNOPQRSTUVWXY"]))
    number = str(draw(st.integers(0, 99)))
    suffix = draw(st.sampled_from(["", "A", "W"])) if len(number) == 1 else ""
    inward = str(draw(st.integers(0, 9))) + "".join(
        draw(st.lists(st.sampled_from(list("ABDEFGHJLNPQRSTUWXYZ")), min_size=2, max_size=2))
    )
    return first + second + number + suffix, inward


@given(
    parts=postcode_parts(),
    spaces=st.lists(st.sampled_from(["", " ", "  ", "\t"]), min_size=3, max_size=3),
    lower=st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_any_spacing_and_case_gives_one_unit(parts: tuple[str, str], spaces: list[str], lower: bool) -> None:
    outward, inward = parts
    raw = spaces[0] + outward[:1] + spaces[1] + outward[1:] + spaces[2] + inward
    raw = raw.lower() if lower else raw
    row = parse_postcodes([raw]).iloc[0]
    assert row["level"] == "unit"
    assert row["unit"] == f"{outward} {inward}" and row["district"] == outward
    assert normalize_postcode(row["unit"]) == row["unit"]


def test_zip_codes() -> None:
    parsed = parse_zip_codes(["02134", "2134", "02134-1234", "021341234", "021", "abc", None, " 90210 "])
    assert parsed["level"].astype(str).tolist() == [
        "zip5",
        "invalid",
        "zip5",
        "zip5",
        "zip3",
        "invalid",
        "missing",
        "zip5",
    ]
    zip3 = [None if pd.isna(v) else v for v in parsed["zip3"]]
    assert zip3 == ["021", None, "021", "021", "021", None, None, "902"]
    assert parsed.loc[7, "zip5"] == "90210"
    numeric = parse_zip_codes(pd.Series([1001, 2134, 123456, 501.5]))
    assert numeric["zip5"].tolist()[:2] == ["01001", "02134"]
    assert numeric["level"].astype(str).tolist() == ["zip5", "zip5", "invalid", "invalid"]


def test_natural_order() -> None:
    codes = ["AL10", "B1", "AL2", "AB1", "AL1", "CA6+DG", "CA10", "000", "036"]
    ordered = [codes[i] for i in postcode_order(codes)]
    assert ordered == ["000", "036", "AB1", "AL1", "AL2", "AL10", "B1", "CA6+DG", "CA10"]


# --- population tables -------------------------------------------------------------------------------------------

CENSUS = """Postcode,Total,Males,Females,Occupied_Households
AL1 1AG,14,6,8,6
AL1 1AH,20,10,10,9
AL1 2AA,5,2,3,2
AL101AA,30,14,16,12
B1  1BA,7,4,3,3
B1  1BB,0,0,0,0
EC1A1BB,12,5,7,4
EC1A2AA,1,1,0,1
not-a-code,99,50,49,40
"""


def test_census_unit_format_reader(tmp_path: Path) -> None:
    path = tmp_path / "Postcode_Estimates_Table_1.csv"
    path.write_text(CENSUS, encoding="utf-8")
    table = read_population(path)
    assert table.source_format == "census-unit" and table.country == "uk" and table.level == "unit"
    assert table.levels == ("unit", "sector", "district", "area")
    assert table.invalid == ("not-a-code",) and table.omitted == ()
    assert table.total == 14 + 20 + 5 + 30 + 7 + 0 + 12 + 1
    assert table.population().index.tolist() == [
        "AL1 1AG",
        "AL1 1AH",
        "AL1 2AA",
        "AL10 1AA",
        "B1 1BA",
        "B1 1BB",
        "EC1A 1BB",
        "EC1A 2AA",
    ]
    assert table.population("sector").to_dict() == {
        "AL1 1": 34,
        "AL1 2": 5,
        "AL10 1": 30,
        "B1 1": 7,
        "EC1A 1": 12,
        "EC1A 2": 1,
    }
    assert table.population("district").to_dict() == {"AL1": 39, "AL10": 30, "B1": 7, "EC1A": 13}
    assert table.population("area").to_dict() == {"AL": 69, "B": 7, "EC": 13}
    by_district = table.table("district")
    assert by_district.loc["AL1"].to_dict() == {"population": 39, "males": 18, "females": 21, "households": 17}
    assert (by_district["males"] + by_district["females"] == by_district["population"]).all()
    result = generalize_postcodes(table, strategy="mixed", threshold=20)
    assert result.mapping.to_dict() == {"AL1": "AL1", "AL10": "AL10", "B1": "B", "EC1A": "EC"}
    assert result.populations.to_dict() == {"AL1": 39, "AL10": 30, "B": 7, "EC": 13}
    assert result.below_threshold.to_dict() == {"B": 7, "EC": 13}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Postcode,Total,Males,Females,Occupied_Households\nAL1 1AG,1,1,0,1\nal11ag,2,1,1,1\n", "more than once"),
        ("Postcode,Total,Males,Females,Occupied_Households\nAL1 1AG,-1,0,0,0\nAL1 1AH,2,1,1,1\n", "non-negative"),
        ("Postcode,Total,Males,Females,Occupied_Households\nAL1 1AG,1.5,0,0,0\nAL1 1AH,2,1,1,1\n", "whole numbers"),
        ("Postcode,Total,Males,Females,Occupied_Households\nAL1 1AG,lots,0,0,0\nAL1 1AH,2,1,1,1\n", "whole numbers"),
        ("postcode,population\nAL1,5\nAL1 1AG,3\n", "mix levels"),
        ("postcode,population\nAL,5\nB,3\n", "areas only"),
        ("postcode,population\nfoo,5\nbar,3\n", "no valid UK postcode"),
        ("code,people\nAL1,5\nAL2,3\n", "Cannot tell the format"),
        ("Zip Code ZCTA,2010 Census Population\nabc,5\nxyz,3\n", "no valid 5-digit ZIP"),
    ],
)
def test_bad_population_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "population.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataReadError, match=message):
        read_population(path)


def test_missing_population_file(tmp_path: Path) -> None:
    with pytest.raises(DataReadError, match="not found"):
        read_population(tmp_path / "nope.csv")


def test_unknown_level_is_an_error(ew) -> None:
    with pytest.raises(ParameterError, match="not available"):
        ew.population("unit")


def test_ew_outward_file(ew) -> None:
    assert ew.source_format == "outward" and ew.level == "district" and ew.levels == ("district", "area")
    population = ew.population("district")
    assert len(population) == 2297 and ew.total == 56_075_912 and population.sum() == 56_075_912
    assert len(ew.population("area")) == 106
    assert population.idxmin() == "UB11" and population.min() == 2
    assert population.idxmax() == "CR0" and population.max() == 153_812
    assert ew.invalid == () and ew.omitted == ()


def test_doogal_file(doogal, ew) -> None:
    assert doogal.source_format == "doogal" and doogal.level == "district"
    assert len(doogal.counts) == 2814 and doogal.total == 63_153_528
    assert len(doogal.omitted) == 3114 - 2814 - 1 and doogal.invalid == ("NPT",)
    assert doogal.population("area")[["TD", "DG"]].to_dict() == {"TD": 112_644, "DG": 151_139}
    assert doogal.table("district")["households"].sum() > 0
    joint = pd.concat([ew.population("district"), doogal.population("district")], axis=1, join="inner")
    joint.columns = ["ew", "doogal"]
    assert len(joint) == 2297
    differ = joint.index[joint["ew"] != joint["doogal"]]
    assert sorted(differ) == ["DG14", "DG16", "E3", "TD12", "TD15", "TD5", "TD9"]
    assert joint.loc["E3"].tolist() == [52_181, 52_097]
    assert doogal.coordinates is not None and doogal.coordinates.loc["CR9"].round(3).tolist() == [-0.095, 51.375]
    assert doogal.nearby is not None and (doogal.nearby["a"] < doogal.nearby["b"]).all()


def test_us_zcta_file(zcta) -> None:
    assert zcta.country == "us" and zcta.level == "zip5" and zcta.levels == ("zip5", "zip3")
    assert zcta.total == 308_739_931
    assert zcta.population("zip5").loc["01001"] == 16_769
    # ZCTAs crossing a state line are listed once per state and summed: 02861 = 14 + 26,164.
    assert zcta.population("zip5").loc["02861"] == 26_178
    assert len(zcta.population("zip3")) == 891


# --- strategies on the real data ---------------------------------------------------------------------------------


def independent_mixed(data_dir: Path, threshold: int) -> pd.Series:
    raw = pd.read_csv(data_dir.joinpath(*EW), dtype={"postcode": str})
    raw["area"] = raw["postcode"].str.extract(r"^([A-Z]+)", expand=False)
    raw["published"] = np.where(raw["population"] < threshold, raw["area"], raw["postcode"])
    return raw.groupby("published")["population"].sum()


def test_ew_area_strategy(ew) -> None:
    result = generalize_postcodes(ew, strategy="area")
    assert result.comparison == "<" and result.threshold == 20_000
    assert len(result.populations) == 106
    assert result.below_threshold.to_dict() == {"DG": 65, "TD": 18_331}
    assert result.members["DG"] == ("DG14", "DG16")
    assert ew.population("district")[["DG14", "DG16", "TD5", "TD9", "TD12", "TD15"]].tolist() == [
        7,
        58,
        10,
        105,
        1_289,
        16_927,
    ]


def test_ew_outward_strategy(ew) -> None:
    result = generalize_postcodes(ew, strategy="outward")
    assert len(result.below_threshold) == 1010
    assert (result.mapping.index == result.mapping.to_numpy()).all()
    below = result.below_threshold
    assert below.iloc[:4].to_dict() == {"UB11": 2, "EC2N": 5, "EC3M": 6, "DG14": 7}
    assert (np.diff(below.to_numpy()) >= 0).all()
    # "same with <= 20,000": no outward code holds exactly 20,000 people.
    population = ew.population("district")
    assert fails_threshold(population, 20_000, strategy="zip3").sum() == 1010
    assert result.original_below_threshold.equals(below)


def test_ew_mixed_strategy(ew, data_dir: Path) -> None:
    result = generalize_postcodes(ew, strategy="mixed")
    assert len(result.populations) == 1388
    expected_below = {
        "DG": 65,
        "SR": 5_336,
        "CR": 10_220,
        "UB": 14_338,
        "PR": 15_387,
        "EN": 17_203,
        "SL": 17_531,
        "TD": 18_331,
        "HG": 18_374,
        "SM": 18_559,
        "DH": 19_570,
        "WN": 19_742,
    }
    assert result.below_threshold.to_dict() == expected_below
    assert list(result.below_threshold.index) == list(expected_below)
    assert result.populations.sort_index().equals(
        independent_mixed(data_dir, 20_000).sort_index().rename("population").rename_axis("code")
    )
    assert "CR9" in result.members["CR"] and "M60" in result.members["M"]
    # the published area stands for its fallen-back districts only
    assert result.populations["DG"] == 65 and result.populations["TD"] == 18_331


def test_ew_merge_with_doogal_neighbours(ew, doogal) -> None:
    result = generalize_postcodes(ew, strategy="merge", neighbours=neighbours_from_doogal(doogal))
    assert result.below_threshold.empty
    assert len(result.merges) == 11 and all(m.reason == "adjacent" for m in result.merges)
    assert [m.unit for m in result.merges][:3] == ["DG", "SR", "CR"]
    first = result.merges[0]
    assert (first.unit, first.population, first.into, first.result) == ("DG", 65, "CA7", "CA7+DG")
    assert result.mapping["DG14"] == result.mapping["DG16"] == "CA7+DG"
    check_invariants(result, ew.total)


@pytest.mark.parametrize("strategy", ["area", "outward", "mixed"])
def test_invariants_on_real_uk_data(ew, strategy: str) -> None:
    check_invariants(generalize_postcodes(ew, strategy=strategy), ew.total)


def test_us_zip3_safe_harbor(zcta) -> None:
    result = generalize_postcodes(zcta, strategy="zip3")
    assert result.comparison == "<=" and result.source_level == "zip3"
    original = result.original_below_threshold
    assert len(original) == 18
    assert sorted(original[original == 0].index) == ["202", "204", "753", "772"]
    populated = ["036", "059", "102", "203", "205", "369", "556", "692", "821", "823", "878", "879", "884", "893"]
    assert sorted(original[original > 0].index) == populated
    assert set(result.mapping[result.mapping == SUPPRESSED_ZIP3].index) == set(original.index)
    assert result.populations[SUPPRESSED_ZIP3] == original.sum() == 158_064
    assert len(result.populations) == 891 - 18 + 1
    assert result.below_threshold.empty  # 000 is the suppression code, never a failing unit
    check_invariants(result, 308_739_931)


def test_threshold_boundaries() -> None:
    table = districts({"AA1": 20_000, "AA2": 19_999, "BB1": 30_000})
    mixed = generalize_postcodes(table, strategy="mixed")
    assert mixed.mapping.to_dict() == {"AA1": "AA1", "AA2": "AA", "BB1": "BB1"}
    zips = population_from_frame(pd.DataFrame({"zcta": ["01001", "02001", "03001"], "population": [20_000, 20_001, 5]}))
    result = generalize_postcodes(zips, strategy="zip3")
    assert result.mapping.to_dict() == {"010": "000", "020": "020", "030": "000"}
    assert fails_threshold(np.array([19_999, 20_000, 20_001]), 20_000, strategy="area").tolist() == [True, False, False]
    assert fails_threshold(np.array([19_999, 20_000, 20_001]), 20_000, strategy="zip3").tolist() == [True, True, False]
    assert generalize_postcodes(table, strategy="outward", threshold=0).below_threshold.empty


def test_strategy_errors(ew, zcta) -> None:
    with pytest.raises(ParameterError, match="Unknown postcode strategy"):
        generalize_postcodes(ew, strategy="sector")
    with pytest.raises(ParameterError, match="does not apply"):
        generalize_postcodes(ew, strategy="zip3")
    with pytest.raises(ParameterError, match="does not apply"):
        generalize_postcodes(zcta, strategy="mixed")
    with pytest.raises(ParameterError, match="needs district neighbours"):
        generalize_postcodes(ew, strategy="merge")
    with pytest.raises(ParameterError, match="threshold"):
        generalize_postcodes(ew, strategy="area", threshold=-1)
    with pytest.raises(ParameterError, match="threshold"):
        generalize_postcodes(ew, strategy="area", threshold=2.5)  # type: ignore[arg-type]


def check_invariants(result: PostcodeGeneralization, total: int) -> None:
    """Every original code mapped; published populations sum to the total; each unit is its members' sum."""
    assert result.mapping.index.equals(result.original_populations.index)
    assert result.mapping.notna().all()
    assert set(result.mapping.to_numpy()) == set(result.populations.index)
    assert int(result.populations.sum()) == int(result.original_populations.sum()) == total
    sums = result.original_populations.groupby(result.mapping.to_numpy()).sum()
    assert (sums.reindex(result.populations.index).to_numpy() == result.populations.to_numpy()).all()
    json.dumps(result.to_dict(), allow_nan=False)


# --- merge rule on hand-built tables -----------------------------------------------------------------------------


def test_merge_by_hand() -> None:
    """Threshold 20. mixed: AA = AA1+AA3 = 13, BB = BB1 = 3, CC = CC1 = 12 fail; AA2 = 30 and BB2 = 50 stay.

    1. smallest failing is BB (3); its neighbours AA (13, via AA3-BB1) and BB2 (50): into AA -> AA+BB = 16.
    2. smallest failing is CC (12); its neighbours AA+BB (16, via AA1-CC1) and BB2 (50): -> AA+BB+CC = 28.
    """
    table = districts({"AA1": 5, "AA2": 30, "AA3": 8, "BB1": 3, "BB2": 50, "CC1": 12})
    neighbours = Neighbours(
        pairs(("AA1", "AA2"), ("AA2", "AA3"), ("AA3", "BB1"), ("BB1", "BB2"), ("BB2", "CC1"), ("AA1", "CC1"))
    )
    result = generalize_postcodes(table, strategy="merge", threshold=20, neighbours=neighbours)
    assert [(m.unit, m.population, m.into, m.into_population, m.result, m.reason) for m in result.merges] == [
        ("BB", 3, "AA", 13, "AA+BB", "adjacent"),
        ("CC", 12, "AA+BB", 16, "AA+BB+CC", "adjacent"),
    ]
    assert result.mapping.to_dict() == {
        "AA1": "AA+BB+CC",
        "AA2": "AA2",
        "AA3": "AA+BB+CC",
        "BB1": "AA+BB+CC",
        "BB2": "BB2",
        "CC1": "AA+BB+CC",
    }
    assert result.populations.to_dict() == {"AA+BB+CC": 28, "AA2": 30, "BB2": 50}
    assert result.below_threshold.empty


def test_merge_ties_are_broken_by_natural_code_order() -> None:
    table = districts({"AA1": 5, "BB1": 5, "CC1": 5, "DD1": 40})
    neighbours = Neighbours(pairs(("AA1", "BB1"), ("BB1", "CC1"), ("CC1", "DD1")))
    result = generalize_postcodes(table, strategy="merge", threshold=12, neighbours=neighbours)
    # AA (first of three at 5) merges into its only neighbour BB; then CC (5) is the smallest failing unit and
    # its neighbours AA+BB (10) and DD1 (40): AA+BB is smaller.
    assert [m.result for m in result.merges] == ["AA+BB", "AA+BB+CC"]
    shuffled = districts({"DD1": 40, "CC1": 5, "BB1": 5, "AA1": 5})
    again = generalize_postcodes(
        shuffled, strategy="merge", threshold=12, neighbours=Neighbours(neighbours.pairs.iloc[::-1])
    )
    assert again.mapping.to_dict() == result.mapping.to_dict()


def test_merge_fallbacks_for_units_without_neighbours() -> None:
    table = districts({"AA1": 5, "AA2": 30, "BB1": 50, "DD1": 2, "EE1": 3, "EE2": 30})
    centroids = pd.DataFrame(
        {"lon": [0.0, 0.1, 5.0, 0.2], "lat": [50.0, 50.0, 50.0, 50.0]}, index=["AA1", "AA2", "BB1", "DD1"]
    )
    neighbours = Neighbours(pairs(("AA1", "AA2"), ("AA2", "BB1")), centroids=centroids)
    result = generalize_postcodes(table, strategy="merge", threshold=20, neighbours=neighbours)
    # DD (2): no neighbour, a centroid: the nearest district is AA2 (0.1 degree away; AA1 0.2, BB1 4.8).
    # EE (3): no neighbour, no centroid: the smallest other unit of area EE, EE2.
    # AA (5): adjacent to AA2+DD.
    assert [(m.unit, m.into, m.result, m.reason) for m in result.merges] == [
        ("DD", "AA2", "AA2+DD", "nearest"),
        ("EE", "EE2", "EE+EE2", "same area"),
        ("AA", "AA2+DD", "AA+AA2+DD", "adjacent"),
    ]
    assert result.below_threshold.empty
    # CC (CC1 + CC2 = 7): no neighbour, no coordinates, no other unit in its area: an error, not a guess.
    alone = districts({"AA1": 30, "CC1": 4, "CC2": 3})
    with pytest.raises(ParameterError, match="no neighbour, no coordinates"):
        generalize_postcodes(alone, strategy="merge", threshold=20, neighbours=Neighbours(pairs(("AA1", "AA2"))))


def test_merge_non_geographic_district_stays_in_its_area() -> None:
    # CR9 has no polygon (no neighbours, no centroid): when it is a unit of its own it joins its area's smallest unit.
    table = districts({"CR0": 150_000, "CR2": 40_000, "CR9": 339, "SE25": 30_000})
    neighbours = Neighbours(pairs(("CR0", "CR2"), ("CR0", "SE25")))
    result = generalize_postcodes(table, strategy="merge", neighbours=neighbours)
    assert [(m.unit, m.into, m.reason) for m in result.merges] == [("CR", "CR2", "same area")]
    assert result.mapping["CR9"] == "CR+CR2" and result.populations["CR+CR2"] == 40_339


def test_merge_when_everything_is_too_small() -> None:
    table = districts({"AA1": 3, "AA2": 4, "BB1": 5})
    result = generalize_postcodes(
        table, strategy="merge", threshold=100, neighbours=Neighbours(pairs(("AA1", "BB1"), ("AA2", "BB1")))
    )
    assert result.populations.to_dict() == {"AA+BB": 12}
    assert result.below_threshold.to_dict() == {"AA+BB": 12}


@st.composite
def grid_tables(draw: st.DrawFn) -> tuple[dict[str, int], list[tuple[str, str]], int]:
    """Districts on a connected grid of areas A..E x numbers, random populations and threshold."""
    areas = draw(st.lists(st.sampled_from(list("ABCDEFGH")), min_size=1, max_size=5, unique=True))
    per_area = draw(st.integers(1, 4))
    codes = [f"{a}{a}{i}" for a in areas for i in range(1, per_area + 1)]
    populations = {c: draw(st.integers(0, 60)) for c in codes}
    edges = [(codes[i], codes[i + 1]) for i in range(len(codes) - 1)]  # a path: connected
    extra = draw(st.lists(st.tuples(st.sampled_from(codes), st.sampled_from(codes)), max_size=6))
    return populations, edges + extra, draw(st.integers(1, 120))


@given(grid_tables())
@settings(max_examples=150, deadline=None)
def test_merge_invariants(case: tuple[dict[str, int], list[tuple[str, str]], int]) -> None:
    populations, edges, threshold = case
    table = districts(populations)
    neighbours = Neighbours(pairs(*edges))
    result = generalize_postcodes(table, strategy="merge", threshold=threshold, neighbours=neighbours)
    check_invariants(result, sum(populations.values()))
    if sum(populations.values()) >= threshold:
        assert result.below_threshold.empty
    else:
        assert len(result.populations) == 1
    mixed = generalize_postcodes(table, strategy="mixed", threshold=threshold)
    # every merged unit is a union of whole mixed units
    for unit in result.populations.index:
        parts = set(unit.split("+"))
        members = set(result.mapping[result.mapping == unit].index)
        assert set(mixed.mapping[list(members)]) == parts
    # deterministic whatever the row order
    reordered = districts(dict(reversed(list(populations.items()))))
    again = generalize_postcodes(reordered, strategy="merge", threshold=threshold, neighbours=neighbours)
    assert again.mapping.to_dict() == result.mapping.to_dict()


# --- unit populations, JSON --------------------------------------------------------------------------------------


def test_unit_populations_from_a_saved_mapping(ew) -> None:
    result = generalize_postcodes(ew, strategy="mixed")
    again = unit_populations(ew, result.to_dict()["mapping"])
    assert again.index.tolist() == result.populations.index.tolist()
    assert (again.to_numpy() == result.populations.to_numpy()).all()
    partial = dict(list(result.to_dict()["mapping"].items())[:-1])
    with pytest.raises(ParameterError, match="unmapped"):
        unit_populations(ew, partial)


def test_to_dict_shape(ew) -> None:
    payload = generalize_postcodes(ew, strategy="area").to_dict()
    assert {"strategy", "threshold", "units", "below_threshold", "mapping"} <= payload.keys()
    assert payload["below_threshold"] == [{"code": "DG", "population": 65}, {"code": "TD", "population": 18_331}]
    assert sum(u["population"] for u in payload["units"]) == 56_075_912
    assert len(payload["mapping"]) == 2297 and payload["mapping"]["TD15"] == "TD"
    json.dumps(payload, allow_nan=False)


def test_default_data_dir_is_beside_the_working_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    work = tmp_path / "clone"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("PRIVDASH_DATA_DIR", str(tmp_path / "elsewhere"))  # the core never reads the environment
    assert default_data_dir() == tmp_path.resolve() / "shared" / "data"


def test_strategy_enum() -> None:
    assert Strategy.parse(" Mixed ") is Strategy.MIXED
    assert Strategy.ZIP3.country == "us" and Strategy.MERGE.comparison == "<"


# --- applying a mapping to data ----------------------------------------------------------------------------------


def people() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pc": [
                "DG14 5AB",
                "dg16 5xx",
                "EC1A1BB",
                "B  1 1BA",
                "TD15",
                "td15 1",
                "zz1 1aa",
                None,
                "Q1 1AA",
                "EH1 1AA",
                "DG",
            ],
            "age": [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6],
        }
    )


def test_recode_postcodes(ew) -> None:
    result = generalize_postcodes(ew, strategy="mixed")
    data = people()
    before = data.copy()
    out = result.recode(data, column="pc")
    assert data.equals(before)
    assert out.data["pc"].tolist()[:6] == ["DG", "DG", "EC", "B", "TD", "TD"]
    assert out.data["pc"].isna().tolist() == [False] * 6 + [True] * 4 + [False]
    assert out.data["pc"].iloc[10] == "DG"  # area value: every DG district is published as DG
    assert out.data["age"].equals(data["age"])
    summary = out.summary
    assert summary["invalid"] == 2 and summary["invalid_values"] == ["zz1 1aa", "Q1 1AA"]
    assert summary["unmapped"] == 1 and summary["unmapped_values"] == ["EH1 1AA"]
    assert summary["missing"] == 1 and summary["suppressed"] == 3 and summary["changed"] == 9
    assert summary["levels"] == {"unit": 5, "sector": 1, "district": 1, "area": 1, "invalid": 2}
    assert summary["published_units"] == 4
    assert out.mapping is not None and len(out.mapping) == 10
    assert out.mapping.set_index("original")["published"].to_dict()["B  1 1BA"] == "B"
    json.dumps(out.step.to_dict(), allow_nan=False)


def test_recode_area_values_need_a_shared_code(ew) -> None:
    outward = generalize_postcodes(ew, strategy="outward")
    out = outward.recode(pd.DataFrame({"pc": ["DG", "DG14"]}), column="pc")
    assert out.data["pc"].isna().tolist() == [True, False]
    assert out.summary["unmapped"] == 1


def test_recode_is_a_registered_recipe_step(ew) -> None:
    assert "postcode_recoding" in registered_steps()  # its one name; recipes saying postcode_recode still load
    result = generalize_postcodes(ew, strategy="area")
    data = people()
    direct = result.recode(data, column="pc")
    step = result.to_step(column="pc")
    assert step.kind == direct.step.kind == "postcode_recoding"
    assert apply_step(data, step).data.equals(direct.data)
    recipe = Recipe.from_dict(json.loads(Recipe((direct.step,)).to_json()))
    final, results = apply_recipe(data, recipe)
    assert final.equals(direct.data) and results[0].summary == direct.summary


def test_recode_errors(ew) -> None:
    result = generalize_postcodes(ew, strategy="area")
    data = people()
    with pytest.raises(ParameterError, match="not valid UK postcodes"):
        result.recode(data, column="pc", invalid="error")
    with pytest.raises(ParameterError, match="outside the mapping"):
        result.recode(data.iloc[[9]], column="pc", unmapped="error")
    with pytest.raises(ColumnError, match="postcode column"):
        result.recode(data, column="postcode")
    with pytest.raises(ParameterError, match="invalid must be"):
        result.recode(data, column="pc", invalid="guess")
    with pytest.raises(ParameterError, match="non-empty"):
        recode_postcodes(data, column="pc", mapping={})
    with pytest.raises(ParameterError, match="country"):
        recode_postcodes(data, column="pc", mapping={"B1": "B"}, country="fr")
    with pytest.raises(ParameterError, match="Step 'postcode_recoding'"):  # an old kind, named by its new name
        apply_step(data, Step("postcode_recode", {"column": "pc", "mapping": {"B1": "B"}, "colour": "red"}))


def test_recode_us_zip_codes(zcta) -> None:
    result = generalize_postcodes(zcta, strategy="zip3")
    data = pd.DataFrame({"zip": [1001, 20201, 2861, 99999999, None]}, dtype="Int64")
    out = result.recode(data, column="zip")
    assert out.data["zip"].tolist()[:3] == ["010", "000", "028"]
    assert out.data["zip"].isna().tolist() == [False, False, False, True, True]
    assert out.summary["invalid"] == 1
    text = pd.DataFrame({"zip": ["02134-1234", "20201", "0213", "021"]})
    out = result.recode(text, column="zip")
    assert out.data["zip"].tolist()[:2] == ["021", "000"] and pd.isna(out.data["zip"].iloc[2])
    assert out.data["zip"].iloc[3] == "021"


# --- population counts for journalist / marketer risk ------------------------------------------------------------


def sample() -> pd.DataFrame:
    # units U1 (pop 1,000, 6 records) and U2 (pop 400, 4 records) and one record with a missing postcode
    return pd.DataFrame(
        {
            "pc": ["U1"] * 6 + ["U2"] * 4 + [None],
            "sex": ["M", "M", "M", "M", "F", "F", "M", "F", "F", "F", "M"],
        }
    )


POPULATIONS = pd.Series({"U1": 1_000, "U2": 400, "U3": 600})


def test_population_counts_postcode_only() -> None:
    classes = equivalence_classes(sample(), ["pc"])
    counts = population_counts(classes, column="pc", populations=POPULATIONS)
    keys = classes.keys()["pc"].tolist()
    by_key = dict(zip([k if isinstance(k, str) else None for k in keys], counts, strict=True))
    assert by_key["U1"] == 1_000 and by_key["U2"] == 400
    # a missing postcode: overall fraction f * N / n = 1 * 2,000 / 11
    assert by_key[None] == pytest.approx(2_000 / 11)


def test_population_counts_with_other_quasi_identifiers() -> None:
    classes = equivalence_classes(sample(), ["pc", "sex"])
    counts = population_counts(classes, column="pc", populations=POPULATIONS.to_dict())
    table = classes.keys().assign(f=classes.sizes, F=counts).dropna(subset=["pc"]).set_index(["pc", "sex"])
    # F = f * Pop(u) / n_u
    assert table.loc[("U1", "M"), "F"] == pytest.approx(4 * 1_000 / 6)
    assert table.loc[("U1", "F"), "F"] == pytest.approx(2 * 1_000 / 6)
    assert table.loc[("U2", "M"), "F"] == pytest.approx(1 * 400 / 4)
    assert table.loc[("U2", "F"), "F"] == pytest.approx(3 * 400 / 4)
    assert (counts >= classes.sizes).all()


def test_population_counts_edge_cases() -> None:
    classes = equivalence_classes(sample(), ["pc", "sex"])
    small = pd.Series({"U1": 3, "U2": 400})
    counts = population_counts(classes, column="pc", populations=small)
    u1 = classes.keys()["pc"].eq("U1").to_numpy()
    assert (counts[u1] == classes.sizes[u1]).all()  # census below the sample count: F = f
    with pytest.raises(ParameterError, match="fewer people in the census"):
        population_counts(classes, column="pc", populations=small, strict=True)
    with pytest.raises(PrivdashError, match="without a census population"):
        population_counts(classes, column="pc", populations=pd.Series({"U1": 1_000}))
    with pytest.raises(ColumnError, match="not a quasi-identifier"):
        population_counts(classes, column="postcode", populations=POPULATIONS)
    empty = equivalence_classes(sample().iloc[:0], ["pc"])
    assert population_counts(empty, column="pc", populations=POPULATIONS).shape == (0,)


def test_population_counts_after_recode(ew) -> None:
    result = generalize_postcodes(ew, strategy="mixed")
    data = pd.DataFrame({"pc": ["DG14 5AB", "DG16 5XX", "AL1 1AG", "AL1 1AH"], "sex": ["M", "F", "M", "M"]})
    recoded = result.recode(data, column="pc").data
    classes = equivalence_classes(recoded, ["pc"])
    counts = population_counts(classes, column="pc", populations=result.populations)
    assert dict(zip(classes.keys()["pc"], counts, strict=True)) == {"DG": 65, "AL1": 36_291}
