"""sdcMicro's model-based risk (modRisk): sdcMicro's own test vectors, its R code on testdata, hand-computed IPF
values and bad inputs.

The R reference values (17 significant digits) were printed by ``Rscript scripts/sdcmicro_modrisk_reference.R``,
which sources sdcMicro's R/modRisk.R unchanged (commit cf3251017482bb215f0a9abf4a930f502399fb72).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.measure.diagnose import diagnose
from privdash.measure.model_risk import (
    MAX_DESIGN_ENTRIES,
    MAX_GRID_CELLS,
    MODEL_RISK_METHODS,
    check_model_request,
    model_risk,
    parse_model_risk_methods,
)

KEYS3 = ["Var1", "Var2", "Var3"]
TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]

# sdcMicro's tests/testthat/test_modRisks.R builds sample_Data with set.seed(123) and runif; R 4.2 printed this table
# (Var1 then becomes the factor A/B/C of the values 1/2/3).
SAMPLE_ROWS = [
    (2, 2, 5, 100),
    (3, 1, 4, 100),
    (2, 2, 4, 100),
    (3, 2, 5, 100),
    (3, 1, 4, 100),
    (1, 2, 4, 100),
    (2, 1, 3, 100),
    (3, 1, 3, 100),
    (2, 1, 2, 100),
    (2, 2, 2, 100),
]
NA = None
# The same with missing keys (the sdcMicroObj variant of the tests, whose weights are all present).
SAMPLE_MISSING_ROWS = [
    (2, 2, 5, 100),
    (NA, 1, NA, 100),
    (2, NA, 4, 100),
    (3, 2, 5, 100),
    (3, NA, 4, 100),
    (1, 2, 4, 100),
    (NA, 1, 3, 100),
    (3, 1, NA, 100),
    (NA, 1, 2, 100),
    (2, NA, 2, 100),
]

# (method, bound) -> (gr1, gr2) from scripts/sdcmicro_modrisk_reference.R.
R_SAMPLE = {
    ("default", math.inf): (0.55291595153625794, 0.70538420924133594),
    ("CE", math.inf): (0.54168015793448132, 0.69867973334312272),
    ("PML", math.inf): (0.55291595153625794, 0.70538420924133594),
    ("weightedLLM", math.inf): (0.4079663131960159, 0.61325442555064447),
    ("IPF", math.inf): (0.55291595169109853, 0.70538420934134605),
    ("default", 1.5): (0.62203044547829023, 0.79355723539650291),
    ("CE", 1.5): (0.60939017767629144, 0.78601470001101303),
    ("PML", 1.5): (0.62203044547829023, 0.79355723539650291),
    ("weightedLLM", 1.5): (0.45896210234551793, 0.68991122874447497),
    ("IPF", 1.5): (0.62203044565248578, 0.79355723550901425),
}
R_SAMPLE_MISSING = {
    "default": (0.5842088008051084, 0.77194437583472197),
    "CE": (0.57271204316633706, 0.76513862395507592),
    "PML": (0.5842088008051084, 0.77194437583472197),
    "weightedLLM": (0.37157669102204699, 0.63477101916965173),
    "IPF": (0.58420880080510817, 0.77194437583472186),
}  # the same with bound 1.5 (no non-empty complete cell has more than one record)
R_TESTDATA = {
    ("default", math.inf): (0.2249330480973577, 0.28042216626930527),
    ("CE", math.inf): (0.22076640073977957, 0.2775107655086067),
    ("PML", math.inf): (0.2249330480973577, 0.28042216626930527),
    ("weightedLLM", math.inf): (0.2270992437481581, 0.28425126614730128),
    ("IPF", math.inf): (0.22493304810014997, 0.28042216627070216),
    ("default", 2): (0.42316171605530306, 0.52755220320983454),
    ("CE", 2): (0.41532309180269034, 0.52207504744084909),
    ("PML", 2): (0.42316171605530306, 0.52755220320983454),
    ("weightedLLM", 2): (0.42723693344402347, 0.53475580663327915),
    ("IPF", 2): (0.42316171606055608, 0.52755220321246254),
}
R_TESTDATA_INTERACTION = {  # + water:electcon
    "default": (0.23226836589629846, 0.28679717960461087),
    "CE": (0.22804828273665226, 0.28393246920007043),
    "PML": (0.23226836589629846, 0.28679717960461087),
    "weightedLLM": (0.22828154114331609, 0.2854957005760525),
}
R_TESTDATA_HOUSEHOLD_WEIGHTS = {  # weights household_weights, bound 5
    "default": (0.33149946769401922, 0.41117118450532436),
    "CE": (0.3067372524729563, 0.39467378950927401),
    "PML": (0.3217682422856476, 0.40360769705179461),
    "weightedLLM": (0.34149629059348457, 0.4218971774777765),
    "IPF": (0.33149946769783817, 0.4111711845072345),
}
R_HOUSEHOLD_PML_INTERACTION = (0.32862241900971567, 0.4110105165470142)

# R's fitted values of the sample (grid sorted by Var1, Var2, Var3: Var3 varies fastest).
R_SAMPLE_FITTED = {
    "default": [
        0.099999999970537462,
        0.099999999973426346,
        0.20000000045078978,
        0.09999999997102596,
        0.10000000001252965,
        0.10000000001541853,
        0.20000000053477415,
        0.10000000001301815,
        0.49999999972335835,
        0.49999999973780285,
        1.000000001995291,
        0.49999999972580095,
        0.49999999993331923,
        0.49999999994776373,
        1.0000000024152127,
        0.49999999993576183,
        0.40000000026568877,
        0.40000000027724442,
        0.80000000257023696,
        0.40000000026764287,
        0.40000000043365752,
        0.40000000044521311,
        0.80000000290617435,
        0.40000000043561157,
    ],
    "CE": [
        0.098261221287038361,
        0.098674956786830623,
        0.19642232678852756,
        0.098706307186148728,
        0.09753692557026683,
        0.09794761137409104,
        0.21447192065301832,
        0.097978730685705895,
        0.52002811813761474,
        0.52221773160410323,
        0.94502399385618407,
        0.47489422491301947,
        0.51619492602342809,
        0.47124399961452468,
        1.0318639145525077,
        0.51853309239013956,
        0.38540985659913174,
        0.42573591587518705,
        0.84746973210541809,
        0.38715561642486523,
        0.38256895247968442,
        0.38417978485776788,
        0.7647481154706719,
        0.42273202850122166,
    ],
    "weightedLLM": [
        0.02531582319156692,
        0.051332810346756831,
        0.012283898449503476,
        0.023619760581852504,
        0.063882710569547987,
        0.12953475939884673,
        0.63442742270958263,
        0.059602815107159431,
        0.52914396226441585,
        1.0729434494588717,
        0.012544794766801259,
        0.02412141798130046,
        1.3352578083347428,
        0.13228593337086697,
        0.6479019543379636,
        1.2458006800435257,
        0.013168899256831412,
        0.54652107125583604,
        2.6767174795586746,
        0.01228663374756494,
        0.033230796935883745,
        0.067381976239648658,
        0.016124450382970206,
        0.63456869285330897,
    ],
}


def _sample(rows: list[tuple[object, ...]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=[*KEYS3, "weights"])
    frame["Var1"] = frame["Var1"].map({1: "A", 2: "B", 3: "C"})
    return frame


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    return _sample(SAMPLE_ROWS)


@pytest.fixture(scope="module")
def sample_missing() -> pd.DataFrame:
    return _sample(SAMPLE_MISSING_ROWS)


@pytest.fixture(scope="module")
def testdata(data_dir: Path) -> pd.DataFrame:
    return pd.read_csv(data_dir / "sdcmicro_testdata" / "testdata.csv")


def _close(value: float | None, reference: float, rel: float) -> None:
    assert value is not None
    assert value == pytest.approx(reference, rel=rel, abs=0)


# --- (a) sdcMicro's own test vectors --------------------------------------------------------------------------------

# What tests/testthat/test_modRisks.R asserts: (method, bound) -> ((gr1, digits), (gr2, digits)).
SDCMICRO_ASSERTED = {
    ("default", math.inf): ((0.553, 3), (0.705, 3)),
    ("CE", math.inf): ((0.542, 3), (0.699, 3)),
    ("PML", math.inf): ((0.553, 3), (0.705, 3)),
    ("weightedLLM", math.inf): ((0.408, 3), (0.613, 3)),
    ("IPF", math.inf): ((0.552916, 6), (0.7053842, 7)),
    ("default", 1.5): ((0.622, 3), (0.794, 3)),
    ("CE", 1.5): ((0.609, 3), (0.786, 3)),
    ("PML", 1.5): ((0.622, 3), (0.794, 3)),
    ("weightedLLM", 1.5): ((0.459, 3), (0.69, 3)),
    ("IPF", 1.5): ((0.622, 3), (0.794, 3)),
}


@pytest.mark.parametrize(("method", "bound"), list(SDCMICRO_ASSERTED))
def test_sdcmicro_test_vectors(sample: pd.DataFrame, method: str, bound: float) -> None:
    result = model_risk(sample, KEYS3, "weights", method=method, bound=bound)
    (gr1, digits1), (gr2, digits2) = SDCMICRO_ASSERTED[(method, bound)]
    assert result.risk1 is not None and result.risk2 is not None
    assert round(result.risk1, digits1) == gr1 and round(result.risk2, digits2) == gr2
    r1, r2 = R_SAMPLE[(method, bound)]
    _close(result.risk1, r1, 1e-6)
    _close(result.risk2, r2, 1e-6)
    assert result.risk1_percent == pytest.approx(100 * result.risk1)
    assert result.risk_cells == (9 if bound == math.inf else 8)  # one cell holds two records


def test_sdcmicro_fitted_values_and_inclusion(sample: pd.DataFrame) -> None:
    default = model_risk(sample, KEYS3, "weights", method="default")
    # sdcMicro's tests round the fitted values (fr[7]) to 2 digits.
    assert np.round(default.cells["fitted"].to_numpy(), 2).tolist() == [
        0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 0.2, 0.1, 0.5, 0.5, 1.0, 0.5, 0.5, 0.5, 1.0, 0.5, 0.4, 0.4, 0.8, 0.4, 0.4, 0.4,
        0.8, 0.4,
    ]  # fmt: skip
    ce = model_risk(sample, KEYS3, "weights", method="CE")
    assert np.round(ce.cells["fitted"].to_numpy(), 2).tolist() == [
        0.10, 0.10, 0.20, 0.10, 0.10, 0.10, 0.21, 0.10, 0.52, 0.52, 0.95, 0.47, 0.52, 0.47, 1.03, 0.52, 0.39, 0.43,
        0.85, 0.39, 0.38, 0.38, 0.76, 0.42,
    ]  # fmt: skip
    for method, fitted in R_SAMPLE_FITTED.items():
        result = model_risk(sample, KEYS3, "weights", method=method)
        np.testing.assert_allclose(result.cells["fitted"].to_numpy(), fitted, rtol=1e-6)
    # IPF's table (fr[7] of the IPF test) is in xtabs order: Var1 varies fastest.
    ipf = model_risk(sample, KEYS3, "weights", method="IPF")
    assert np.round(ipf.cells["fitted"].to_numpy().reshape(3, 2, 4).ravel(order="F"), 2).tolist() == [
        0.1, 0.5, 0.4, 0.1, 0.5, 0.4, 0.1, 0.5, 0.4, 0.1, 0.5, 0.4, 0.2, 1, 0.8, 0.2, 1, 0.8, 0.1, 0.5, 0.4, 0.1, 0.5,
        0.4,
    ]  # fmt: skip
    # fr[8], inclProb of the cells in the denominator, in grid order.
    cells = default.cells
    kept = cells[cells["count"] > 0]
    assert np.round(kept["inclusion"].to_numpy(), 2).tolist() == [0.01] * 7 + [0.02, 0.01]
    # Per sample unique: exp(-(1 - p) lambda) and (1 - exp(-v)) / v with R's fitted values; gr1 is their mean over m.
    uniques = default.sample_uniques
    fitted = np.asarray(R_SAMPLE_FITTED["default"])[cells.index[(cells["count"] == 1)]]
    np.testing.assert_allclose(uniques["p_population_unique"], np.exp(-0.99 * fitted), rtol=1e-8)
    np.testing.assert_allclose(uniques["p_match"], (1 - np.exp(-0.99 * fitted)) / (0.99 * fitted), rtol=1e-8)
    assert default.risk1 == pytest.approx(uniques["p_population_unique"].sum() / 9)
    assert list(uniques.columns[:3]) == KEYS3 and len(uniques) == 8


SDCMICRO_MISSING_ASSERTED = {  # the sdcMicroObj tests with missing keys
    ("weightedLLM", math.inf): (0.372, 3),
    ("IPF", math.inf): (0.584, 3),
    ("default", 1.5): (0.584, 3),
    ("CE", 1.5): (0.573, 3),
    ("PML", 1.5): (0.584, 3),
    ("weightedLLM", 1.5): (0.372, 3),
    ("IPF", 1.5): (0.584, 3),
}


@pytest.mark.parametrize("method", MODEL_RISK_METHODS)
@pytest.mark.parametrize("bound", [math.inf, 1.5])
def test_missing_keys_as_sdcmicro(sample_missing: pd.DataFrame, method: str, bound: float) -> None:
    result = model_risk(sample_missing, KEYS3, "weights", method=method, bound=bound)
    if (method, bound) in SDCMICRO_MISSING_ASSERTED:
        gr1, digits = SDCMICRO_MISSING_ASSERTED[(method, bound)]
        assert result.risk1 is not None and round(result.risk1, digits) == gr1
    r1, r2 = R_SAMPLE_MISSING[method]
    _close(result.risk1, r1, 1e-6)
    _close(result.risk2, r2, 1e-6)
    # Only the three records with every key observed are in the risk; the seven others are left out.
    assert result.risk_cells == 3 and int(result.cells["count"].sum()) == 3
    assert any("7 records with a missing key value are left out" in note for note in result.warnings)
    # The grid still holds every observed value of each key: 3 x 2 x 4.
    assert len(result.cells) == 24


def test_missing_keys_under_every_policy_give_sdcmicros_value(sample_missing: pd.DataFrame) -> None:
    for policy in ("value", "wildcard"):
        classes = equivalence_classes(sample_missing, KEYS3, weights="weights", missing=policy)
        result = model_risk(classes, method="CE")
        _close(result.risk1, R_SAMPLE_MISSING["CE"][0], 1e-6)
    # Under drop the records with a missing key are out of scope, grid included: Var2 keeps one value (2).
    classes = equivalence_classes(sample_missing, KEYS3, weights="weights", missing="drop")
    with pytest.raises(ParameterError, match=r"'Var2' has one observed value \('2.0'\)"):
        model_risk(classes, method="PML")


# --- (b) testdata against sdcMicro's R code -------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "bound"), list(R_TESTDATA))
def test_testdata_every_method(testdata: pd.DataFrame, method: str, bound: float) -> None:
    result = model_risk(testdata, TESTDATA_KEYS, "sampling_weight", method=method, bound=bound)
    r1, r2 = R_TESTDATA[(method, bound)]
    _close(result.risk1, r1, 1e-6)
    _close(result.risk2, r2, 1e-6)
    assert result.converged and result.warnings == ()
    assert len(result.cells) == 2 * 5 * 3 * 8 * 3 * 9 * 2
    counts = result.cells["count"]
    assert result.risk_cells == int(((counts > 0) & (counts <= bound)).sum()) == (412 if bound == math.inf else 219)
    assert len(result.sample_uniques) == 157


@pytest.mark.parametrize("method", list(R_TESTDATA_INTERACTION))
def test_testdata_with_an_interaction(testdata: pd.DataFrame, method: str) -> None:
    result = model_risk(testdata, TESTDATA_KEYS, "sampling_weight", method=method, interactions=[("water", "electcon")])
    r1, r2 = R_TESTDATA_INTERACTION[method]
    _close(result.risk1, r1, 1e-6)
    _close(result.risk2, r2, 1e-6)
    assert result.formula.endswith("+ water:electcon")
    # The interaction changes the value: it is in the model.
    plain = R_TESTDATA[(method, math.inf)][0]
    assert abs(result.risk1 - plain) > 1e-3  # type: ignore[operator]


@pytest.mark.parametrize("method", MODEL_RISK_METHODS)
def test_testdata_with_varying_weights(testdata: pd.DataFrame, method: str) -> None:
    result = model_risk(testdata, TESTDATA_KEYS, "household_weights", method=method, bound=5)
    r1, r2 = R_TESTDATA_HOUSEHOLD_WEIGHTS[method]
    _close(result.risk1, r1, 1e-6)
    _close(result.risk2, r2, 1e-6)


def test_testdata_varying_weights_pml_with_interaction_and_no_bound(testdata: pd.DataFrame) -> None:
    result = model_risk(
        testdata, TESTDATA_KEYS, "household_weights", method="PML", bound=5, interactions=[("electcon", "water")]
    )
    _close(result.risk1, R_HOUSEHOLD_PML_INTERACTION[0], 1e-6)
    _close(result.risk2, R_HOUSEHOLD_PML_INTERACTION[1], 1e-6)
    # Without a bound, sdcMicro's sum(as.numeric(freq == 1) * risk) is NaN here (0 * Inf from a large cell whose
    # inclusion sum exceeds 1); privdash sums over the sample uniques only, as the definition says.
    unbounded = model_risk(testdata, TESTDATA_KEYS, "household_weights", method="default")
    assert unbounded.risk1 is not None and 0 < unbounded.risk1 < 1
    assert unbounded.risk2 is not None and 0 < unbounded.risk2 < 1


def test_from_classes_on_every_engine_equals_the_rows(testdata: pd.DataFrame, data_dir: Path) -> None:
    rows = model_risk(testdata, TESTDATA_KEYS, "household_weights", method="CE", bound=5)
    unbounded = model_risk(testdata, TESTDATA_KEYS, "household_weights", method="CE")
    path = data_dir / "sdcmicro_testdata" / "testdata.csv"
    for engine in ("pandas", "duckdb"):
        diagnosis = diagnose(
            testdata if engine == "pandas" else path,
            TESTDATA_KEYS,
            weights="household_weights",
            engine=engine,
            model_risk=["CE"],
        )
        classes = diagnosis.classes
        assert classes.inverse_weight_sums is not None
        assert model_risk(classes, method="CE", bound=5).risk1 == pytest.approx(rows.risk1, rel=1e-12)
        assert diagnosis.model_risk["CE"].risk1 == pytest.approx(unbounded.risk1, rel=1e-12)
    # A subset of the classes' QIs as keys: the cells are summed over the other QIs.
    classes = equivalence_classes(testdata, TESTDATA_KEYS, weights="sampling_weight")
    subset = model_risk(classes, ["urbrur", "roof", "sex"], method="default")
    direct = model_risk(testdata, ["urbrur", "roof", "sex"], "sampling_weight", method="default")
    assert subset.risk1 == pytest.approx(direct.risk1, rel=1e-12)


def test_diagnose_reports_every_method(testdata: pd.DataFrame) -> None:
    diagnosis = diagnose(
        testdata,
        TESTDATA_KEYS,
        weights="sampling_weight",
        model_risk=["default", "ipf", "weightedLLM"],
        model_interactions=[],
    )
    assert list(diagnosis.model_risk) == ["default", "IPF", "weightedLLM"]
    payload = diagnosis.to_dict()["model_risk"]
    for method in ("default", "IPF", "weightedLLM"):
        entry = payload[method]
        r1, r2 = R_TESTDATA[(method, math.inf)]
        assert entry["risk1"] == pytest.approx(r1, rel=1e-6) and entry["risk2"] == pytest.approx(r2, rel=1e-6)
        assert entry["risk1_percent"] == pytest.approx(100 * r1, rel=1e-6)
        assert entry["risk2_percent"] == pytest.approx(100 * r2, rel=1e-6)
        assert entry["model"] and entry["method"] == method
    assert "model_risk" not in diagnose(testdata, TESTDATA_KEYS).to_dict()


# --- (c) IPF's closed form by hand ----------------------------------------------------------------------------------


def test_ipf_closed_form_by_hand() -> None:
    # a in {x, y}, b in {1, 2, 3}; n = 5, margins a: x 3, y 2; b: 1 -> 3, 2 -> 1, 3 -> 1.
    data = pd.DataFrame(
        {
            "a": ["x", "x", "x", "y", "y"],
            "b": [1, 1, 2, 3, 1],
            "w": [10.0, 10.0, 4.0, 2.0, 5.0],
        }
    )
    result = model_risk(data, ["a", "b"], "w", method="IPF")
    # lambda = n_a * n_b / n: x1 9/5, x2 3/5, x3 3/5, y1 6/5, y2 2/5, y3 2/5.
    assert result.cells["fitted"].tolist() == pytest.approx([1.8, 0.6, 0.6, 1.2, 0.4, 0.4], rel=1e-15)
    assert result.cells["count"].tolist() == [2, 1, 0, 1, 0, 1]
    assert result.cells["inclusion"].tolist() == pytest.approx([0.2, 0.25, 0, 0.2, 0, 0.5])
    # m = 4 non-empty cells; sample uniques x2 (p 1/4, lambda 0.6), y1 (p 1/5, lambda 1.2), y3 (p 1/2, lambda 0.4).
    v = np.array([0.75 * 0.6, 0.8 * 1.2, 0.5 * 0.4])
    assert result.risk_cells == 4
    assert result.risk1 == pytest.approx(np.exp(-v).sum() / 4, rel=1e-14)
    assert result.risk2 == pytest.approx(((1 - np.exp(-v)) / v).sum() / 4, rel=1e-12)
    assert result.risk1 == pytest.approx((math.exp(-0.45) + math.exp(-0.96) + math.exp(-0.2)) / 4, rel=1e-14)
    # The Poisson GLM of the main effects has the same maximum-likelihood fit.
    glm = model_risk(data, ["a", "b"], "w", method="default")
    np.testing.assert_allclose(glm.cells["fitted"], result.cells["fitted"], rtol=1e-8)
    # With bound 1 only the three unique cells are in m.
    assert model_risk(data, ["a", "b"], "w", method="IPF", bound=1).risk1 == pytest.approx(np.exp(-v).sum() / 3)


def test_pml_rounds_half_to_even() -> None:
    # Weight sums scaled by n / sum(w) = 4 / 8 = 0.5: cells 5 -> 2.5 -> 2 and 3 -> 1.5 -> 2 (R's round), 0 -> 0.
    data = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": [1, 2, 1, 2], "w": [5.0, 1.0, 1.0, 1.0]})
    pml = model_risk(data, ["a", "b"], "w", method="PML")
    assert "round(weights * n / sum(w))" in pml.model
    # round(2.5, 0.5, 0.5, 0.5) = (2, 0, 0, 0): the fit of that response has x1 -> 2 and every other cell 0.
    assert pml.cells["fitted"].to_numpy() == pytest.approx([2, 0, 0, 0], abs=1e-6)


# --- (d) bad inputs and edge cases ----------------------------------------------------------------------------------


def test_unknown_method_names_the_valid_ones(sample: pd.DataFrame) -> None:
    with pytest.raises(ParameterError, match="default, CE, PML, weightedLLM, IPF"):
        model_risk(sample, KEYS3, "weights", method="poisson")
    with pytest.raises(ParameterError, match="'nope'"):
        parse_model_risk_methods("default,nope")
    assert parse_model_risk_methods("ce, Ipf,CE") == ("CE", "IPF")


def test_grid_too_large() -> None:
    values = np.arange(200)
    data = pd.DataFrame({"a": values, "b": values, "c": values})
    with pytest.raises(ParameterError, match=r"200 x 200 x 200 = 8,000,000 cells.*2,000,000"):
        model_risk(data, ["a", "b", "c"])
    # Under the cell limit, the design matrix of a GLM can still be too large; IPF needs none.
    wide = pd.DataFrame({"a": np.arange(1500), "b": np.arange(1500) % 1000})
    with pytest.raises(ParameterError, match=rf"1,500,000 grid cells \(1500 x 1000\).*{MAX_DESIGN_ENTRIES:,}"):
        model_risk(wide, ["a", "b"])
    assert model_risk(wide, ["a", "b"], method="IPF").risk1 is not None
    assert MAX_GRID_CELLS == 2_000_000


def test_interactions_refused_with_ipf_and_checked(sample: pd.DataFrame) -> None:
    with pytest.raises(ParameterError, match="IPF fits the main effects only"):
        model_risk(sample, KEYS3, "weights", method="IPF", interactions=[("Var1", "Var2")])
    with pytest.raises(ParameterError, match="IPF fits the main effects only"):
        check_model_request(["default", "IPF"], [("Var1", "Var2")], KEYS3)
    with pytest.raises(ColumnError, match="Var9"):
        model_risk(sample, KEYS3, "weights", interactions=[("Var1", "Var9")])
    with pytest.raises(ParameterError, match="itself"):
        model_risk(sample, KEYS3, "weights", interactions=[("Var1", "Var1")])
    # A pair given twice, or reversed, is one term.
    once = model_risk(sample, KEYS3, "weights", interactions=[("Var1", "Var2")])
    twice = model_risk(sample, KEYS3, "weights", interactions=[("Var2", "Var1"), ("Var1", "Var2")])
    assert once.interactions == twice.interactions == (("Var1", "Var2"),)
    assert once.risk1 == pytest.approx(twice.risk1, rel=1e-12)


def test_a_key_with_one_value(sample: pd.DataFrame) -> None:
    data = sample.assign(const="z")
    for method in MODEL_RISK_METHODS:
        with pytest.raises(ParameterError, match=r"'const' has one observed value \('z'\)"):
            model_risk(data, [*KEYS3, "const"], "weights", method=method)


def test_equal_weights(sample: pd.DataFrame) -> None:
    # sample_Data's weights are all 100: covered above. All weights 1 (sdcMicro's weights without a weight
    # variable): every sample unique has p = 1, exp(0) = 1, and (1 - exp(0)) / 0 is NaN in sdcMicro (R printed
    # gr1 = 8/9 and gr2 = NaN for every method): risk2 is not made.
    unit = sample.assign(weights=1.0)
    for method in MODEL_RISK_METHODS:
        result = model_risk(unit, KEYS3, "weights", method=method)
        assert result.risk1 == pytest.approx(0.88888888888888884, rel=1e-12)
        assert result.risk2 is None and result.risk2_percent is None
        assert any("risk2 is not defined" in note for note in result.warnings)
        assert result.to_dict()["risk2"] is None
    # No weights at all: weights 1, with a sentence saying so.
    result = model_risk(sample, KEYS3, method="CE")
    assert result.risk1 == pytest.approx(8 / 9) and result.risk2 is None
    assert result.warnings[0].startswith("No sampling weights: every weight is taken as 1")


def test_a_missing_key(sample: pd.DataFrame) -> None:
    with pytest.raises(ParameterError, match="'Var2' is missing in every record"):
        model_risk(sample.assign(Var2=None), KEYS3, "weights")
    # Every record misses some key: nothing to fit.
    data = pd.DataFrame({"a": ["x", None, "y", None], "b": [None, 1, None, 2], "w": [1.0, 1.0, 1.0, 1.0]})
    with pytest.raises(ParameterError, match="No record has every key observed"):
        model_risk(data, ["a", "b"], "w")
    with pytest.raises(ColumnError):
        model_risk(sample, ["Var1", "nope"], "weights")
    with pytest.raises(ColumnError, match="Weight column"):
        model_risk(sample.assign(weights=[None, *[100.0] * 9]), KEYS3, "weights")


def test_bound_and_other_parameters(sample: pd.DataFrame) -> None:
    for bound in (0, -1, float("nan"), True, "2"):
        with pytest.raises(ParameterError, match="bound"):
            model_risk(sample, KEYS3, "weights", bound=bound)  # type: ignore[arg-type]
    # A bound below 1 leaves no cell: not made, never 0.
    result = model_risk(sample, KEYS3, "weights", bound=0.5)
    assert result.risk1 is None and result.risk2 is None and result.risk_cells == 0
    classes = equivalence_classes(sample, KEYS3, weights="weights")
    with pytest.raises(ParameterError, match="carry their own weight sums"):
        model_risk(classes, weights="weights")
    with pytest.raises(ColumnError, match="not quasi-identifiers"):
        model_risk(classes, ["Var1", "weights"])
