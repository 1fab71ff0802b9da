"""The "Perturb and mask" section's logic: the columns each method offers, the step the choices describe, and a
preview whose numbers are the core's (the step and the risk measures called directly, with the same seed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privdash.application.protect import (
    MAP_POINTS,
    ProtectColumns,
    ProtectError,
    perturbed_table,
    preview_protection,
    protect_columns,
    protect_step,
    recipe_json,
    stored_step,
)
from privdash.application.services import LoadedDataset, Services
from privdash.application.settings import Settings
from privdash.application.sources import ServerSource, SourceError
from privdash.application.state import ViewState
from privdash.data.contract import ColumnRole, StatisticalType, suggest_contract
from privdash.errors import ColumnError, ParameterError
from privdash.geo.geomask import donut_masking, masking_points
from privdash.measure.perturbed import perturbation_risk
from privdash.transform.perturbation import add_noise, pram, rank_swap, shuffling
from privdash.transform.steps import Step


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Services:
    folder = tmp_path_factory.mktemp("protect")
    return Services(Settings(store_dir=folder / "store", cache_dir=folder / "cache"))


@pytest.fixture(scope="module")
def people(services: Services) -> LoadedDataset:
    return services.dataset("demo:people")


@pytest.fixture(scope="module")
def options(services: Services, people: LoadedDataset) -> ProtectColumns:
    state = services.initial_state(people, ViewState())
    return protect_columns(people.frame, services.contract(people, state))


def loaded_frame(frame: pd.DataFrame, **props: object) -> LoadedDataset:
    return LoadedDataset(id="demo:test", title="test", frame=frame, contract=suggest_contract(frame), **props)  # type: ignore[arg-type]


def homes(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"lat": 51.5 + rng.normal(0, 0.02, n), "lon": -0.12 + rng.normal(0, 0.03, n), "illness": rng.integers(0, 3, n)}
    )


# --- columns ------------------------------------------------------------------------------------------------------


def test_columns_follow_the_types_and_roles(people: LoadedDataset, options: ProtectColumns) -> None:
    frame, contract = people.frame, people.contract
    identifiers = set(contract.identifiers)
    for name in options.numerical:
        assert pd.api.types.is_numeric_dtype(frame[name]) and name not in identifiers
    assert set(options.numerical) == {"age", "transaction_amount"}
    assert {"sex", "diagnosis"} <= set(options.categorical) and not identifiers & set(options.categorical)
    assert not set(options.shufflable) & (set(contract.quasi_identifiers) | identifiers)
    assert options.defaults("add_noise") == ["age", "transaction_amount"]  # numerical QIs and sensitive attributes
    assert options.defaults("pram") == ["diagnosis"]  # the categorical sensitive attribute
    assert options.defaults("shuffling") == ["transaction_amount", "diagnosis"]  # the sensitive attributes
    assert not options.has_coordinates and "donut_masking" not in options.methods()


def test_coordinate_columns_offer_geomasking() -> None:
    frame = homes(20)
    contract = suggest_contract(frame)
    assert contract["lat"].statistical_type == StatisticalType.COORDINATE  # inferred from the names
    options = protect_columns(frame, contract)
    assert options.latitudes == ("lat",) and options.longitudes == ("lon",)
    assert {"donut_masking", "coordinate_perturbation"} <= set(options.methods())
    assert "lat" not in options.numerical  # coordinates are moved as points, not as numbers


# --- previews are the core's numbers -------------------------------------------------------------------------------


def test_noise_preview_is_the_core_applied_directly(people: LoadedDataset, options: ProtectColumns) -> None:
    step = protect_step("add_noise", options, columns=["transaction_amount", "age"], share=0.2, seed=11)
    heard: list[int] = []
    preview = preview_protection(people, step, lambda percent, _text: heard.append(percent))
    assert heard and heard == sorted(heard)
    direct = add_noise(people.frame, columns=["transaction_amount", "age"], share=0.2, seed=11)
    pd.testing.assert_frame_equal(preview.data, direct.data)
    expected = perturbation_risk(people.frame, direct.data, ["transaction_amount", "age"])
    assert preview.risk is not None
    assert preview.risk.to_dict() == expected.to_dict()
    assert 0 < preview.risk.linkage < 1
    assert preview.moments is not None
    assert preview.moments.loc["age", "mean_before"] == pytest.approx(people.frame["age"].mean())
    assert preview.moments.loc["age", "sd_after"] == pytest.approx(direct.data["age"].std())
    assert f"{100 * expected.linkage:.1f}%" in preview.reading
    assert preview.step.to_dict() == direct.step.to_dict()
    # Correlated noise goes through the same path.
    correlated = protect_step(
        "add_noise", options, columns=["age", "transaction_amount"], share=0.1, noise="correlated"
    )
    assert preview_protection(people, correlated).step.params["method"] == "correlated"


def test_rank_swap_preview_keeps_means_and_variances(people: LoadedDataset, options: ProtectColumns) -> None:
    preview = preview_protection(people, protect_step("rank_swap", options, columns=["age"], p=10, seed=4))
    direct = rank_swap(people.frame, columns=["age"], p=10, seed=4)
    expected = perturbation_risk(people.frame, direct.data, ["age"])
    assert preview.risk is not None and preview.risk.linkage == expected.linkage
    assert preview.risk.interval_disclosure == expected.interval_disclosure
    assert preview.risk.mean_change == pytest.approx(0.0, abs=1e-12)  # swapping only moves values
    assert preview.risk.correlation_change is None  # one column: no pair


def test_pram_preview_counts_the_core_changes(people: LoadedDataset, options: ProtectColumns) -> None:
    preview = preview_protection(
        people, protect_step("pram", options, columns=["diagnosis"], pd_=0.7, alpha=0.6, seed=5)
    )
    direct = pram(people.frame, columns=["diagnosis"], pd=0.7, alpha=0.6, seed=5)
    (change,) = preview.changes
    assert change.changed == direct.summary["cells_changed"]["diagnosis"] > 0
    assert change.share_changed == change.changed / len(people.frame)
    after = direct.data["diagnosis"].value_counts(normalize=True)
    before = people.frame["diagnosis"].value_counts(normalize=True)
    top = change.distribution
    assert list(top["value"]) == [str(v) for v in before.index[: len(top)]]
    assert np.allclose(top["after"], after.reindex(before.index[: len(top)]).fillna(0).to_numpy())
    both = before.index.union(after.index)
    tv = 0.5 * (before.reindex(both, fill_value=0) - after.reindex(both, fill_value=0)).abs().sum()
    assert change.total_variation == pytest.approx(tv)
    assert "PRAM published another category" in preview.reading


def test_shuffle_preview_keeps_the_distribution(services: Services, people: LoadedDataset) -> None:
    state = services.initial_state(people, ViewState()).with_quasi_identifiers(["sex"], ["diagnosis"])
    options = protect_columns(people.frame, services.contract(people, state))
    preview = preview_protection(people, protect_step("shuffling", options, columns=["diagnosis"], seed=6))
    direct = shuffling(people.frame, columns=["diagnosis"], quasi_identifiers=["sex"], seed=6)
    pd.testing.assert_frame_equal(preview.data, direct.data)
    (change,) = preview.changes
    assert change.changed == direct.summary["cells_changed"]["diagnosis"] > 0
    assert change.total_variation == pytest.approx(0.0, abs=1e-12)
    assert "every class keeps its values" in preview.reading


def test_donut_preview_has_the_core_spatial_k_and_a_sample_for_the_map() -> None:
    frame = homes(MAP_POINTS + 500)
    loaded = loaded_frame(frame)
    options = protect_columns(frame, loaded.contract)
    step = protect_step(
        "donut_masking", options, latitude="lat", longitude="lon", min_distance=50, max_distance=400, k_target=3, seed=8
    )
    preview = preview_protection(loaded, step)
    direct = donut_masking(
        frame, latitude="lat", longitude="lon", min_distance=50, max_distance=400, k_target=3, seed=8
    )
    assert preview.spatial == {
        "spatial_k": direct.summary["spatial_k"],
        "displacement_m": direct.summary["displacement_m"],
    }
    points = preview.points
    assert points is not None and len(points) == MAP_POINTS
    every = masking_points(frame, direct.data, latitude="lat", longitude="lon", k_target=3)
    pd.testing.assert_frame_equal(points, every.loc[points.index])
    assert ((points["displacement_m"] >= 50 - 1e-6) & (points["displacement_m"] <= 400 + 1e-6)).all()
    assert "spatial k" in preview.reading
    perturbed = protect_step("coordinate_perturbation", options, latitude="lat", longitude="lon", scale=100, seed=2)
    assert preview_protection(loaded, perturbed).spatial is not None


def test_seed_makes_the_preview_reproducible_and_an_empty_one_is_drawn(
    services: Services, people: LoadedDataset, options: ProtectColumns
) -> None:
    drawn = protect_step("add_noise", options, columns=["age"], share=0.1, seed="")
    assert isinstance(drawn.params["seed"], int) and drawn.params["seed"] >= 0
    first = preview_protection(people, drawn)
    again = preview_protection(people, stored_step(first.step.to_dict()))
    pd.testing.assert_frame_equal(first.data, again.data)
    kept = perturbed_table(services, people, first.step)
    pd.testing.assert_frame_equal(kept, first.data)
    assert perturbed_table(services, people, first.step) is kept  # the second download reads the cache
    recipe = first.recipe_json()
    assert recipe == recipe_json(first.step)
    assert f'"seed": {drawn.params["seed"]}' in recipe and '"kind": "add_noise"' in recipe


def test_csv_download_is_formula_safe(options: ProtectColumns) -> None:
    frame = pd.DataFrame({"note": ["=HYPERLINK(1)", "plain", "+1", "x"], "amount": [1.0, 2.0, 3.0, 4.0]})
    loaded = loaded_frame(frame)
    options = protect_columns(frame, loaded.contract)
    text = preview_protection(loaded, protect_step("rank_swap", options, columns=["amount"], p=50, seed=1)).csv()
    assert "'=HYPERLINK(1)" in text and "\n'+1," in text


# --- refusals ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "kwargs", "message"),
    [
        (None, {}, "Choose a method"),
        ("donut_masking", {}, "Choose a method"),  # no coordinates in this table
        ("add_noise", {"columns": [], "share": 0.1}, "Choose at least one numerical column"),
        ("add_noise", {"columns": ["age"], "share": ""}, "Give the noise's standard deviation"),
        ("add_noise", {"columns": ["age"], "share": "a lot"}, "must be a number, got 'a lot'"),
        ("add_noise", {"columns": ["age"], "share": 0.1, "noise": "pink"}, "Choose the kind of noise"),
        ("add_noise", {"columns": ["sex"], "share": 0.1}, "cannot be applied to 'sex'"),
        ("add_noise", {"columns": ["age"], "share": 0.1, "seed": 1.5}, "The seed must be a whole number"),
        ("add_noise", {"columns": ["age"], "share": 0.1, "seed": -3}, "The seed must be a whole number between 0 and"),
        ("rank_swap", {"columns": ["age"], "p": None}, "Give p"),
        ("pram", {"columns": ["diagnosis"], "pd_": 0.8}, "Give alpha"),
        ("add_noise", {"columns": ["age"], "share": "nan"}, "must be a finite number, got 'nan'"),
        ("add_noise", {"columns": ["age"], "share": 10**400}, "must be a finite number, got a number too large"),
        ("rank_swap", {"columns": ["age"], "p": "1e999"}, "must be a finite number, got '1e999'"),
    ],
)
def test_bad_choices_are_refused_with_a_message(
    options: ProtectColumns, method: str | None, kwargs: dict, message: str
) -> None:
    with pytest.raises(ProtectError, match=message.replace("(", r"\(")):
        protect_step(method, options, **kwargs)


@pytest.mark.parametrize(
    ("method", "kwargs", "error", "message"),
    [
        ("add_noise", {"columns": ["age"], "share": -0.5}, ParameterError, r"share must lie in \[0, 100\]"),
        ("rank_swap", {"columns": ["age"], "p": 150}, ParameterError, r"p must be a percentage in \(0, 100\]"),
        ("pram", {"columns": ["diagnosis"], "pd_": 1.5, "alpha": 0.5}, ParameterError, "pd"),
        ("add_noise", {"columns": ["age"], "share": 1e308}, ParameterError, r"share must lie in \[0, 100\]"),
    ],
)
def test_the_core_refuses_bad_parameters(
    people: LoadedDataset, options: ProtectColumns, method: str, kwargs: dict, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        preview_protection(people, protect_step(method, options, seed=1, **kwargs))


def test_no_suitable_column_and_no_quasi_identifier() -> None:
    frame = pd.DataFrame({"city": ["a", "b", "c"], "job": ["x", "y", "z"]})
    options = protect_columns(frame, suggest_contract(frame))
    with pytest.raises(ProtectError, match="This dataset has no numerical column to add noise to"):
        protect_step("add_noise", options, columns=["city"], share=0.1)
    contract = suggest_contract(frame).with_roles({"city": ColumnRole.SENSITIVE, "job": ColumnRole.INSENSITIVE})
    options = protect_columns(frame, contract)
    with pytest.raises(ProtectError, match="has none: mark them on the Data page"):
        protect_step("shuffling", options, columns=["city"])


def test_bad_donut_distances_are_the_core_message() -> None:
    frame = homes(30)
    loaded = loaded_frame(frame)
    options = protect_columns(frame, loaded.contract)
    step = protect_step(
        "donut_masking", options, latitude="lat", longitude="lon", min_distance=500, max_distance=100, seed=1
    )
    with pytest.raises(ParameterError, match=r"min_distance \(500 m\) must be smaller than max_distance"):
        preview_protection(loaded, step)
    with pytest.raises(ProtectError, match="Choose the latitude and the longitude"):
        protect_step("coordinate_perturbation", options, latitude="lon", longitude="lat", scale=10)


def test_a_server_side_source_is_refused(people: LoadedDataset, options: ProtectColumns) -> None:
    source = ServerSource(name="big", title="Big table", path="/nowhere/big.parquet")
    loaded = LoadedDataset(
        id="source:big", title="Big table", frame=people.frame, contract=people.contract, source=source
    )
    with pytest.raises(SourceError, match="needs every row in the server's memory"):
        preview_protection(loaded, protect_step("add_noise", options, columns=["age"], share=0.1, seed=1))


@pytest.mark.parametrize(
    "forged",
    [
        {"kind": "pseudonymize", "params": {"columns": ["name"], "seed": 1}},
        {"kind": "donut_masking", "params": {"latitude": "a", "longitude": "b", "data_dir": "/etc", "seed": 1}},
        {"kind": "add_noise", "params": {"columns": ["age"], "share": 0.1, "method": "uncorrelated", "seed": None}},
        {"kind": "add_noise", "params": {"columns": ["age"], "share": 0.1, "seed": 1, "extra": 1}},
        {"kind": "add_noise", "extra": {}, "params": {"columns": ["age"], "share": 0.1, "seed": 1}},
        "not a step",
    ],
)
def test_a_forged_stored_step_is_refused(forged: object) -> None:
    with pytest.raises(ProtectError, match=r"[Pp]ress Preview again"):
        stored_step(forged)


def test_column_errors_of_the_core_pass_through(people: LoadedDataset) -> None:
    # A step kept from an earlier table names a column this one lacks: the core says which.
    step = Step("add_noise", {"columns": ["height"], "share": 0.1, "method": "uncorrelated", "seed": 1})
    with pytest.raises(ColumnError, match="height"):
        preview_protection(people, step)
