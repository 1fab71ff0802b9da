"""The Postcodes page compares like with like, and speaks of ZIP3 areas with US data.

"Before" and "after" of Apply both take their population class sizes from the census: the expected sizes are
recounted here with pandas from the census file and the dataset, never with privdash's own functions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.application import postcodes as pc
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.geo.postcodes import Strategy

CENSUS = ("uk_postcode_population_ew2011_outward", "ew2011_outward_code_population.csv")


@pytest.fixture
def services(tmp_path: Path, data_dir: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=data_dir))


def test_before_uses_the_census_of_each_postcodes_district(services: Services, data_dir: Path) -> None:
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded, ViewState())
    outcome = pc.apply_to_dataset(services, state, "postcode")
    assert outcome.before_risk is not None

    census = pd.read_csv(data_dir.joinpath(*CENSUS), dtype={"postcode": str}).set_index("postcode")["population"]
    frame = loaded.frame
    qis = list(state.quasi_identifiers)
    district = frame["postcode"].str.split(" ").str[0]
    in_census = district.isin(census.index)
    n_district = district[in_census].value_counts()
    ratio = (census.reindex(district).to_numpy() / n_district.reindex(district).to_numpy()).astype(float)
    overall = census.sum() / len(frame)
    ratio = np.where(in_census.to_numpy(), ratio, overall)
    keyed = frame[qis].astype(object).where(frame[qis].notna(), "\0missing")
    per_class = pd.DataFrame({"key": keyed.astype(str).agg("|".join, axis=1), "ratio": ratio})
    grouped = per_class.groupby("key")["ratio"].agg(["size", "first"])
    expected = np.sort((grouped["size"] * np.maximum(grouped["first"], 1.0)).to_numpy())
    got = np.sort(np.asarray(outcome.before_risk.population.counts, dtype=float))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    journalist = outcome.before_risk.journalist.highest
    assert journalist == pytest.approx(1 / expected.min())
    # Like with like: on the same basis the recoding lowers the risk, and the sample-based Risk page is higher.
    assert outcome.after_risk.journalist.highest <= journalist < outcome.before.risk.journalist.highest == 1.0


def test_zip3_speaks_of_zip3_areas_and_its_toggle_works() -> None:
    uk = pc.GeoSettings()
    assert [o["value"] for o in pc.level_options(uk)] == list(pc.LEVELS)
    assert pc.view_title(uk) == "Before: districts by their own population"
    us = pc.GeoSettings(source="us", strategy=Strategy.ZIP3)
    options = {o["value"]: o for o in pc.level_options(us)}
    assert options["district"]["label"] == "ZIP3 areas" and options["area"].get("disabled") is True
    assert "district" not in pc.view_title(us) and "ZIP3 areas" in pc.view_title(us)
    units = pc.settings_from_controls(us, "us", "units", "zip3", 20_000, 25)
    assert units.level == "units" and pc.view_title(units).startswith("After: published units of the zip3")
    # Areas do not exist for US data: asking for them shows the ZIP3 areas.
    assert pc.settings_from_controls(us, "us", "area", "zip3", 20_000, 25).level == "district"
    assert pc.settings_from_controls(uk, "ew", "area", "zip3", 20_000, 25).level == "district"
