"""The release report's content: fingerprint, verdict, the values it must never print, definitions quoted from the
documentation, postcode units, the fix section, and the files kept for the dashboard's downloads.

Expected values are computed here from the inputs (hashlib, the core's diagnosis, pandas counts), never read back
from the report's own functions.
"""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.application.report import (
    DEFINITIONS,
    ReportFiles,
    build_report,
    condensed_recipe,
    describe_targets,
    file_fingerprint,
    recipe_fix,
    recipe_steps,
    report_for_state,
    search_fix,
    table_fingerprint,
)
from privdash.application.report.build import WITHHELD_SEED
from privdash.application.report.render import render_html, report_format
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.data.contract import ColumnRole, DataContract, FieldMetadata, StatisticalType
from privdash.data.tables import read_table
from privdash.dp.ledger import TableFingerprint
from privdash.errors import ParameterError, PrivdashError
from privdash.geo.geography import area_polygons_path, district_polygons_dir, load_areas, load_districts
from privdash.geo.postcodes import read_population
from privdash.measure.diagnose import diagnose
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.steps import Recipe

ROOT = Path(__file__).resolve().parents[3]


def text_of(page: str) -> str:
    """The visible text of an HTML page, whitespace collapsed."""
    body = re.sub(r"<style>.*?</style>|<svg.*?</svg>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture
def people() -> pd.DataFrame:
    """Three large classes and two small ones whose values occur nowhere else (k = 5)."""
    rows = (
        [("F", "30-39", "Lisbon", "flu")] * 6
        + [("F", "30-39", "Lisbon", "cold")] * 2
        + [("M", "40-49", "Porto", "flu")] * 5
        + [("M", "40-49", "Porto", "asthma")] * 3
        + [("M", "50-59", "Braga", "cold")] * 7
        + [("F", "90-99", "Zanzibar", "flu")] * 2  # a class of 2
        + [("M", "10-19", "Quokkaville", "cold")]  # a class of 1
    )
    return pd.DataFrame(rows, columns=["sex", "age", "town", "disease"])


@pytest.fixture
def contract(people: pd.DataFrame) -> DataContract:
    return DataContract.for_columns(people, quasi_identifiers=["sex", "age", "town"], sensitive=["disease"])


def test_fingerprint_is_the_tables_content_with_the_files_bytes_beside_it(tmp_path: Path, people: pd.DataFrame) -> None:
    path = tmp_path / "people.csv"
    people.to_csv(path, index=False)
    fingerprint = file_fingerprint(path, people)
    # The digest of the content, as the release ledger keys tables; the file's bytes beside it.
    assert fingerprint.sha256 == TableFingerprint.of(people).digest
    assert fingerprint.file_sha256 == hashlib.sha256(path.read_bytes()).hexdigest() != fingerprint.sha256
    assert (fingerprint.name, fingerprint.rows, fingerprint.columns) == ("people.csv", 26, 4)
    assert fingerprint.size_bytes == path.stat().st_size and "content" in fingerprint.hashed
    # A table without its file: the same content digest as the file holding it; another table, another digest.
    first, again = table_fingerprint("t", people), table_fingerprint("t", people.copy())
    assert first.sha256 == again.sha256 == fingerprint.sha256 != table_fingerprint("t", people.iloc[1:]).sha256
    assert first.size_bytes is None and first.file_sha256 is None
    # The same table spelled otherwise in the file (semicolons, rows in another order): the same content digest.
    other = tmp_path / "people-semicolons.csv"
    people.iloc[::-1].to_csv(other, index=False, sep=";")
    again_file = file_fingerprint(other, read_table(other))
    assert again_file.sha256 == fingerprint.sha256 and again_file.file_sha256 != fingerprint.file_sha256


def test_report_states_the_cores_verdict_and_numbers(people: pd.DataFrame, contract: DataContract) -> None:
    targets = PrivacyTargets(k=5, l=2)
    report = build_report(people, contract, targets, table_fingerprint("people.csv", people))
    expected = diagnose(people, ["sex", "age", "town"], sensitive=["disease"]).check(targets)
    assert report.verdict.sentence() == expected.sentence() and not report.verdict.passed
    page = text_of(render_html(report))
    assert expected.sentence() in page
    assert "FAIL: not safe to release" in page
    # Classes: five, of which two (3 records) are below k; one record is unique.
    assert (report.withheld_classes, report.withheld_records) == (2, 3)
    assert "2 classes smaller than 5 (3 records) are counted, never listed" in page
    assert report.diagnosis.sample_uniques == 1
    assert report.fingerprint.sha256 in page


def test_values_of_small_classes_are_never_printed(people: pd.DataFrame, contract: DataContract) -> None:
    report = build_report(people, contract, PrivacyTargets(k=5), table_fingerprint("people.csv", people))
    for page in (render_html(report), render_html(report, pdf=True)):
        for value in ("Zanzibar", "Quokkaville", "90-99", "10-19"):
            assert value not in page
        for value in ("Lisbon", "Porto", "Braga", "50-59"):  # values of classes of at least 5 records
            assert value in page
    assert "never prints the quasi-identifier values of an equivalence class smaller than 5" in text_of(
        render_html(report)
    )
    # The shown classes are exactly those of at least k records.
    assert sorted(report.shown_classes["size"]) == [7, 8, 8]


def test_a_class_of_one_is_never_shown_even_with_k_1(people: pd.DataFrame, contract: DataContract) -> None:
    report = build_report(people, contract, PrivacyTargets(k=1), table_fingerprint("people.csv", people))
    page = render_html(report)
    assert "Quokkaville" not in page and "Zanzibar" in page  # the class of 2 may be shown, the unique record not
    assert report.threshold == 2


def test_definitions_are_quoted_from_the_documentation(people: pd.DataFrame, contract: DataContract) -> None:
    def normal(text: str) -> str:
        return re.sub(r"\s+", " ", text.replace("`", "").replace("*", ""))

    documentation = normal((ROOT / "docs" / "definitions.md").read_text(encoding="utf-8"))
    for definition in DEFINITIONS:
        for label, part in definition.parts:
            assert normal(part) in documentation, (definition.term, part)
            assert label is None or label in documentation, (definition.term, label)
    page = text_of(render_html(build_report(people, contract, PrivacyTargets(k=5), table_fingerprint("p", people))))
    for definition in DEFINITIONS:
        assert f"{definition.term} {definition.text}" in page, definition.term


def test_fix_section_shows_published_values_of_large_classes_only(people: pd.DataFrame, contract: DataContract) -> None:
    ages = people["age"].unique()
    hierarchies = {
        "sex": Hierarchy.from_rows([["F", "*"], ["M", "*"]]),
        "age": Hierarchy.from_rows([[a, "under 50" if int(a[:2]) < 50 else "50+", "*"] for a in ages]),
        "town": Hierarchy.from_rows([[t, "*"] for t in people["town"].unique()]),
    }
    targets = PrivacyTargets(k=5)
    fix = search_fix(people, contract, targets, hierarchies=hierarchies, max_suppression=0.2)
    report = build_report(people, contract, targets, table_fingerprint("people.csv", people), fix=fix)
    assert report.verdict.passed and report.fix is not None
    # Before and after, independently: the input fails k = 5 (k = 1), the published table meets it.
    assert report.fix.before.k == diagnose(people, ["sex", "age", "town"]).k == 1
    published = fix.data
    assert report.diagnosis.k == diagnose(published, ["sex", "age", "town"]).k >= 5
    assert report.fix.rows_in - report.fix.rows_out == len(people) - len(published)
    page = render_html(report)
    for value in ("Zanzibar", "Quokkaville", "90-99", "10-19"):
        assert value not in page
    # The recipe is summarised: its hierarchy tables (whose leaves are original values) are not printed.
    assert "leaves x" in report.fix.recipe_json and "Zanzibar" not in report.fix.recipe_json
    assert report.fix.recipe_sha256 == hashlib.sha256((fix.recipe.to_json() + "\n").encode()).hexdigest()
    assert report.fix.loss_after is not None and report.fix.loss_after.loss > 0 == report.fix.loss_before.loss


def test_a_recipe_re_applied_gives_the_same_release(people: pd.DataFrame, contract: DataContract) -> None:
    hierarchies = {name: Hierarchy.from_rows([[v, "*"] for v in people[name].unique()]) for name in ("age", "town")}
    searched = search_fix(
        people,
        contract,
        PrivacyTargets(k=5),
        hierarchies={**hierarchies, "sex": Hierarchy.from_rows([["F", "*"], ["M", "*"]])},
        max_suppression=0.2,
    )
    again = recipe_fix(people, searched.recipe, name="recipe.json")
    pd.testing.assert_frame_equal(again.data, searched.data)
    assert again.kept_rows is not None and searched.kept_rows is not None
    assert list(again.kept_rows) == list(searched.kept_rows) and len(again.kept_rows) < len(people)
    assert "recipe.json re-applied: 1 step (generalize)" in again.description


def test_condensed_recipe_keeps_rules_and_drops_leaves() -> None:
    from privdash.transform.steps import Recipe, Step

    recipe = Recipe(
        (
            Step(
                "generalize",
                {
                    "columns": {
                        "town": {"level": 1, "hierarchy": {"rows": [["Zanzibar", "*"], ["Lisbon", "*"]]}},
                        "age": {"level": 1, "hierarchy": {"rule": {"builder": "intervals", "widths": [10]}}},
                    }
                },
            ),
        )
    )
    text = condensed_recipe(recipe)
    assert "Zanzibar" not in text and "2 leaves x 2 levels" in text and '"widths": [10]' in text


def test_condensed_recipe_withholds_the_seed_of_random_masking() -> None:
    """With a noise step's seed and the release, anyone could redraw the noise: the report names the step and its
    settings but not the seed."""
    from privdash.transform.perturbation import add_noise

    data = pd.DataFrame({"income": np.arange(50, dtype=float)})
    step = add_noise(data, columns=["income"], share=0.1, seed=987_654_321).step
    text = condensed_recipe(Recipe((step,)))
    assert "987654321" not in text and WITHHELD_SEED in text and '"share": 0.1' in text


def test_postcode_units_with_census_populations(data_dir: Path) -> None:
    table = read_population(data_dir / "uk_postcode_population_ew2011_outward" / "ew2011_outward_code_population.csv")
    districts = table.population("district")
    a, b, c, d = (str(code) for code in districts.index[:4])
    rows = [(a, "F")] * 12 + [(b, "M")] * 7 + [(c, "F")] * 2 + [(d, "F")] * 3 + [(d, "M")] * 3
    data = pd.DataFrame(rows, columns=["postcode", "sex"])
    qi = ColumnRole.QUASI_IDENTIFIER
    contract = DataContract(
        (FieldMetadata("postcode", qi, StatisticalType.POSTCODE), FieldMetadata("sex", qi, StatisticalType.NOMINAL))
    )
    polygons = {
        "district": load_districts(district_polygons_dir(data_dir)).frame,
        "area": load_areas(area_polygons_path(data_dir)).frame,
    }
    report = build_report(
        data,
        contract,
        PrivacyTargets(k=5),
        table_fingerprint("p", data),
        postcode_population=table,
        postcode_polygons=polygons,
    )
    (units,) = report.postcodes
    # The map draws the named units only: c and d stay off it as they stay out of the table.
    assert sorted(units.mapped["code"]) == sorted([a, b]) and units.outline is not None
    assert dict(zip(units.mapped["code"], units.mapped["fails"], strict=True)) == {
        code: bool(districts[code] < units.threshold) for code in (a, b)
    }
    assert list(units.units["code"]) == sorted([a, b], key=lambda code: districts[code])
    assert dict(zip(units.units["code"], units.units["records"], strict=True)) == {a: 12, b: 7}
    assert dict(zip(units.units["code"], units.units["population"], strict=True)) == {
        a: float(districts[a]),
        b: float(districts[b]),
    }
    # c has 2 records, d 6 records in two classes of 3: both are counted, not named.
    assert (units.withheld_units, units.withheld_records, units.n_units) == (2, 8, 4)
    page = render_html(report)
    assert f">{c}<" not in page and f">{d}<" not in page and f">{a}<" in page
    assert 'aria-label="Map of the named postcode units of postcode"' in page and "<path" in page
    expected_failing = int(sum(districts[code] < units.threshold for code in (a, b, c, d)))
    assert units.failing == expected_failing


def test_report_of_a_dashboard_view_with_fix_steps(tmp_path: Path) -> None:
    services = Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=tmp_path))
    loaded = services.dataset("demo:people")
    state = services.initial_state(loaded).updated(dataset="demo:people")
    plain = report_for_state(services, state)
    assert plain.fix is None and plain.verdict.sentence() == services.diagnosis(state).check(plain.targets).sentence()
    search = {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": None, "max_suppression": 0.05}
    fixed = report_for_state(services, state.updated(fix=(search,)))
    assert fixed.fix is not None and fixed.diagnosis.k >= 5 and fixed.fix.before.k == 1
    assert "Least-lossy" in fixed.fix.description or "search" in fixed.fix.description.lower()
    page = render_html(fixed)
    # No postcode or other QI value of a class smaller than k: every unique record's postcode stays out.
    classes = fixed.fix.before.classes
    small = classes.keys()[classes.sizes < 5]["postcode"].dropna().astype(str)
    assert len(small) > 100 and not any(value in page for value in small)


def test_report_files_are_kept_under_a_token(tmp_path: Path) -> None:
    files = ReportFiles(tmp_path / "reports", ttl=60)
    token = files.put({"pdf": ("a-report.pdf", b"%PDF-1.7"), "html": ("a-report.html", b"<html>")})
    assert files.get(token, "pdf") == ("a-report.pdf", b"%PDF-1.7")
    assert len(token) >= 22 and token != files.put({"pdf": ("b.pdf", b"")})
    with pytest.raises(PrivdashError, match="expired"):
        files.get("not-a-token", "pdf")


def test_output_format_follows_the_extension() -> None:
    assert report_format("a/b/report.PDF") == "pdf" and report_format("r.htm") == "html"
    with pytest.raises(ParameterError, match=r"\.pdf, \.html"):
        report_format("report.docx")


def test_a_population_table_cannot_go_with_a_fix(people: pd.DataFrame, contract: DataContract) -> None:
    fix = recipe_fix(people, search_fix(people, contract, PrivacyTargets(k=2), max_suppression=0.5).recipe)
    with pytest.raises(ParameterError, match="population table cannot be combined with a fix"):
        build_report(people, contract, PrivacyTargets(k=2), table_fingerprint("p", people), fix=fix, population=people)
    assert np.all(fix.data.columns == people.columns)


def test_targets_say_what_they_apply_to_and_never_print_empty_parentheses() -> None:
    targets = PrivacyTargets(k=5, l=2, t=0.2)
    assert describe_targets(targets, ["disease"], {"disease": "equal"}) == (
        "k = 5, l = 2 (distinct l-diversity, on disease), t = 0.2 (equal distance, on disease)"
    )
    # Nothing to say about the attribute: nothing in parentheses.
    assert describe_targets(PrivacyTargets(k=3, t=0.3)) == "k = 3, t = 0.3"
    assert "()" not in targets.describe() and targets.describe() == "k=5, l=2, t=0.2"


def test_recipe_steps_in_words_without_values_or_seeds(people: pd.DataFrame) -> None:
    from privdash.transform.perturbation import add_noise
    from privdash.transform.steps import Step

    generalize = Step(
        "generalize",
        {
            "columns": {
                "town": {"level": 1, "hierarchy": {"rows": [["Zanzibar", "*"], ["Lisbon", "*"], ["Porto", "*"]]}},
                "sex": {"level": 0, "hierarchy": {"rows": [["F", "*"], ["M", "*"]]}},
                "age": {"level": 1, "hierarchy": {"rule": {"builder": "intervals", "widths": [10]}}},
            },
            "suppress": {"k": 5, "l": 2, "sensitive": ["disease"], "t": None, "t_distance": None, "max_risk": None},
            "quasi_identifiers": ["town", "sex", "age"],
        },
    )
    mapping = Step("postcode_recode", {"column": "postcode", "mapping": {"ZE1 0AA": "ZE1", "SW1A 1AA": "SW1A"}})
    noise = add_noise(pd.DataFrame({"income": np.arange(50, dtype=float)}), columns=["income"], share=0.1, seed=4242)
    rows = recipe_steps(Recipe((generalize, mapping, noise.step)))
    (technique, columns, words), (_, postcode, mapped), (noisy, income, noise_words) = rows
    assert technique == "Generalization (global recoding)" and columns == "town, sex, age"
    assert words[:3] == (
        "town to level 1 of 1 (hierarchy table of 3 values)",
        "sex kept as is (level 0 of 1; hierarchy table of 2 values)",
        "age to level 1 (rule: intervals widths 10)",
    )
    assert (
        "then the records of classes that miss k = 5, l = 2 (distinct l-diversity, on disease) are suppressed" in words
    )
    assert postcode == "postcode" and mapped == ("mapping: 2 values mapped",)
    assert noisy == "Noise addition" and income == "income" and "seed withheld" in noise_words
    shown = repr(rows)
    assert not any(value in shown for value in ("Zanzibar", "Lisbon", "ZE1", "SW1A", "4242"))
    # The condensed JSON (the report's attachment) leaves out the same values.
    text = condensed_recipe(Recipe((generalize, mapping, noise.step)))
    assert not any(value in text for value in ("Zanzibar", "ZE1 0AA", "4242")) and "2 values mapped" in text


def test_model_risk_before_and_after_the_fix_or_why_not(people: pd.DataFrame, contract: DataContract) -> None:
    hierarchies = {
        "sex": Hierarchy.from_rows([["F", "*"], ["M", "*"]]),
        "age": Hierarchy.from_rows([[a, "*"] for a in people["age"].unique()]),
        "town": Hierarchy.from_rows([[t, "*"] for t in people["town"].unique()]),
    }
    targets = PrivacyTargets(k=5)
    fix = search_fix(people, contract, targets, hierarchies=hierarchies, max_suppression=0.2)
    report = build_report(people, contract, targets, table_fingerprint("p", people), fix=fix, model_risk=["default"])
    assert report.fix is not None and "default" in report.fix.before.model_risk
    expected = diagnose(people, ["sex", "age", "town"], model_risk=["default"]).model_risk["default"]
    assert report.fix.before.model_risk["default"].risk1 == expected.risk1
    assert (
        report.diagnosis.model_risk["default"].risk1
        == diagnose(fix.data, ["sex", "age", "town"], model_risk=["default"]).model_risk["default"].risk1
    )
    page = text_of(render_html(report))
    assert "risk 1 before the fix" in page and "risk 1 released" in page
    # sex generalized to one value: the released table's models cannot be fitted; the report is made and says why.
    recipe = search_fix(people, contract, targets, hierarchies=hierarchies, max_suppression=0.2).recipe
    step = recipe.steps[0]
    columns = {**step.params["columns"], "sex": {**step.params["columns"]["sex"], "level": 1}}
    flat = recipe_fix(people, Recipe((type(step)(step.kind, {**step.params, "columns": columns}),)))
    report = build_report(people, contract, targets, table_fingerprint("p", people), fix=flat, model_risk=["default"])
    assert not report.diagnosis.model_risk and "default" in report.fix.before.model_risk  # type: ignore[union-attr]
    page = text_of(render_html(report))
    assert "The model-based risk of the released table is not shown: Key variable 'sex' has one observed value" in page


def test_the_sign_off_block_carries_the_fields_filled_in_beforehand(
    people: pd.DataFrame, contract: DataContract
) -> None:
    """A project's sign-off fields fill the block (escaped); fields not given stay empty for the officer."""
    signoff = {"name": "Ann <b>Steward</b>", "decision": "conditions", "identity": "not a sign-off field"}
    report = build_report(
        people, contract, PrivacyTargets(k=5), table_fingerprint("people.csv", people), signoff=signoff
    )
    assert dict(report.signoff) == {"name": "Ann <b>Steward</b>", "decision": "conditions"}
    page = render_html(report)
    block = page[page.index('id="signoff"') :]
    assert 'value="Ann &lt;b&gt;Steward&lt;/b&gt;"' in block and "<b>Steward" not in block
    assert 'value="conditions" checked>' in block and 'value="approve">' in block
    assert 'name="role"\n      value=""' in block
    printed = render_html(report, pdf=True)
    printed_block = printed[printed.index('id="signoff"') :]
    assert "Ann &lt;b&gt;Steward&lt;/b&gt;" in printed_block
    assert printed_block.count("&#x2715;") == 1  # one decision box ticked
    blank = render_html(build_report(people, contract, PrivacyTargets(k=5), table_fingerprint("p", people)))
    assert " checked" not in blank[blank.index('id="signoff"') :]
