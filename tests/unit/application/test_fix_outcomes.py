"""What the Fix page says about a run: the cheapest fix found, a sample of rows before and after, the recipe's
suppression limit and its re-application, and ARX's hierarchies for the Adult demo.

Expected values come from the core called directly (the search, the hierarchies) and from pandas, never from the
functions under test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.application import fixes
from privdash.application.fixruns import FixRuns
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.data.demo import ADULT_QUASI_IDENTIFIERS, people_table
from privdash.errors import PrivdashError
from privdash.search.lattice import optimal_generalization
from privdash.transform.hierarchy import load_hierarchies, search_hierarchy

QIS = ["age", "sex", "postcode"]
AGE = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
SUPPRESS = {"kind": "record_suppression", "k": 5, "max_suppression": 0.2}
SEARCH = {"kind": "search", "k": 5, "l": None, "t": None, "max_risk": None, "max_suppression": 0.05, "metric": "loss"}


@pytest.fixture
def services(tmp_path: Path, data_dir: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=data_dir))


@pytest.fixture
def base(services: Services) -> ViewState:
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    return state.with_quasi_identifiers(QIS, ["diagnosis"])


def test_cheapest_fix_names_what_the_search_changed(services: Services, base: ViewState) -> None:
    run = FixRuns(services).run(base.updated(fix=(SEARCH,)))
    data = people_table()
    contract = services.contract(services.dataset("demo:people"), base)
    hierarchies = {name: search_hierarchy(data[name], contract[name].statistical_type, 5) for name in QIS}
    found = optimal_generalization(data, hierarchies, k=5, max_suppression=0.05)
    sentence = fixes.cheapest_fix(run)
    assert sentence is not None and sentence.startswith("The cheapest fix found (least loss): generalize ")
    assert f"suppress {found.suppressed:,} records ({found.suppressed / len(data):.1%})" in sentence
    kept = np.arange(len(data)) if found.transform.kept_rows is None else found.transform.kept_rows
    for name in QIS:
        changed = found.transform.data[name].astype(str).to_numpy() != data[name].iloc[kept].astype(str).to_numpy()
        assert (f" {name} (e.g. " in sentence or f"generalize {name} (e.g. " in sentence) is bool(changed.any()), name
    assert fixes.cheapest_fix(FixRuns(services).run(base.updated(fix=(AGE,)))) is None


def test_row_sample_shows_records_as_they_were_and_are(services: Services, base: ViewState) -> None:
    run = FixRuns(services).run(base.updated(fix=(AGE, SUPPRESS)))
    sample = fixes.row_sample(run, size=8)
    positions = sample.before.index.to_numpy()
    assert len(positions) == 8 and (np.diff(positions) > 0).all()
    kept = set(run.kept_rows.tolist())
    assert sample.suppressed.tolist() == [p not in kept for p in positions]
    assert sample.suppressed.sum() == 2  # a quarter of the sample shows removed records when there are some
    where = {int(p): i for i, p in enumerate(run.kept_rows.tolist())}
    for row, position in enumerate(positions):
        original = run.original.iloc[position]
        assert sample.before.iloc[row]["age"] == str(original["age"])
        if sample.suppressed[row]:
            assert sample.after.iloc[row].isna().all()
            continue
        published = run.data.iloc[where[int(position)]]
        assert sample.after.iloc[row]["age"] == str(published["age"])
        assert bool(sample.changed.iloc[row]["age"]) is (str(published["age"]) != str(original["age"]))
        assert not sample.changed.iloc[row]["postcode"]  # not generalized
    # Kept records that changed come first: every kept row of the sample changed (ages are always generalized).
    assert sample.changed[~sample.suppressed].any(axis=1).all()
    # Without steps, nothing changed and the first records are shown as they are.
    plain = fixes.row_sample(FixRuns(services).run(base), size=5)
    assert plain.before.index.tolist() == [0, 1, 2, 3, 4] and not plain.changed.to_numpy().any()
    assert plain.before["sex"].isna().sum() == run.original["sex"].iloc[:5].isna().sum()


def _reference_row_sample(run: fixes.FixRun, size: int = 8, columns: int = 8) -> fixes.RowSample:
    """The sample as it was first written: every scanned record's display text built and compared."""
    contract = run.base_contract
    names = [n for n in (*contract.quasi_identifiers, *contract.sensitive) if n in run.data.columns]
    names = list(dict.fromkeys(names))[:columns]
    n = min(len(run.original), fixes.SAMPLE_SCAN)
    kept = np.arange(len(run.original)) if run.kept_rows is None else np.asarray(run.kept_rows, dtype=np.int64)
    published = np.flatnonzero(kept < n)
    removed = np.ones(n, dtype=bool)
    removed[kept[published]] = False
    before = fixes._display(run.original[names].iloc[:n].reset_index(drop=True))
    after = pd.DataFrame(None, index=before.index, columns=names, dtype=object)
    after.iloc[kept[published]] = fixes._display(run.data[names].iloc[published].reset_index(drop=True)).to_numpy()
    differs = (before.ne(after) & ~(before.isna() & after.isna())) & ~removed[:, None]
    touched = np.flatnonzero(differs.any(axis=1).to_numpy())
    gone = np.flatnonzero(removed)
    n_gone = min(len(gone), max(size // 4, 1)) if len(gone) else 0
    chosen = np.concatenate([touched[: size - n_gone], gone[:n_gone]])
    if len(chosen) < size:
        rest = np.setdiff1d(np.arange(n), chosen, assume_unique=True)
        chosen = np.concatenate([chosen, rest[: size - len(chosen)]])
    chosen = np.sort(chosen)
    return fixes.RowSample(before.iloc[chosen], after.iloc[chosen], removed[chosen], differs.iloc[chosen])


@pytest.mark.parametrize(
    "steps",
    [
        (),
        (AGE, SUPPRESS),
        ({"kind": "top_bottom_coding", "column": "age", "top": 60},),
        ({"kind": "local_suppression", "k": 5},),
        ({"kind": "mask_identifiers", "columns": ["phone"]}, {"kind": "local_suppression", "k": 3}),
        ({"kind": "microaggregation", "k": 3},),
    ],
)
@pytest.mark.parametrize("size", [3, 8, 40])
def test_row_sample_equals_the_full_text_comparison(
    services: Services, base: ViewState, steps: tuple[dict[str, object], ...], size: int
) -> None:
    run = FixRuns(services).run(base.updated(fix=steps))
    assert run.error is None
    sample, expected = fixes.row_sample(run, size=size), _reference_row_sample(run, size=size)
    pd.testing.assert_frame_equal(sample.before, expected.before, check_index_type=False)
    # (The full comparison left NaN where a published cell is missing, the sample None: both are missing.)
    pd.testing.assert_frame_equal(sample.after.fillna("-"), expected.after.fillna("-"), check_index_type=False)
    pd.testing.assert_frame_equal(sample.changed, expected.changed, check_index_type=False)
    assert sample.suppressed.tolist() == expected.suppressed.tolist()


def test_recipe_records_the_limit_and_reapplying_warns(services: Services, base: ViewState) -> None:
    run = FixRuns(services).run(base.updated(fix=(AGE, SUPPRESS)))
    assert run.suppression_limit == 0.2 and run.recipe.max_suppression == 0.2
    search = FixRuns(services).run(base.updated(fix=(SEARCH,)))
    assert search.recipe.max_suppression == 0.05
    assert FixRuns(services).run(base.updated(fix=(AGE,))).recipe.max_suppression is None
    text = search.recipe.to_json()
    # The same recipe on its own data keeps within its limit; on a smaller table of other people it removes more.
    same = fixes.reapply_recipe(people_table(), text)
    assert same.warning is None and same.rows_out == len(search.data)
    other = people_table(300, seed=9)
    outcome = fixes.reapply_recipe(other, text)
    removed = len(other) - outcome.rows_out
    assert removed > int(0.05 * len(other))  # derived from the lengths: more than floor(5% of 300)
    assert outcome.warning is not None and f"{removed:,} of {len(other):,} records" in outcome.warning
    assert len(outcome.steps) == 1 and outcome.steps[0].startswith("generalize: ")
    with pytest.raises(PrivdashError, match="not JSON"):
        fixes.reapply_recipe(other, "{not json")
    with pytest.raises(PrivdashError, match="steps"):
        fixes.reapply_recipe(other, '{"nothing": 1}')


def test_adult_search_uses_arx_hierarchies(services: Services, data_dir: Path) -> None:
    loaded = services.dataset("demo:adult")
    state = services.initial_state(loaded, ViewState()).updated(fix=({**SEARCH, "max_suppression": 0.02},))
    run = FixRuns(services).run(state)
    assert run.error is None
    summary = run.results[0].summary["search"]
    qis = list(ADULT_QUASI_IDENTIFIERS)
    expected = optimal_generalization(
        loaded.frame, load_hierarchies(data_dir / "arx_adult" / "hierarchies", qis), k=5, max_suppression=0.02
    )
    assert summary["lattice_size"] == 4_320 == expected.lattice_size
    assert summary["levels"] == expected.levels and summary["suppressed"] == expected.suppressed
    # A column generalized before the search no longer holds ARX's leaves: its default hierarchy is used.
    ages = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [10]}, "level": 1}
    before = FixRuns(services).run(state.updated(fix=(ages, {**SEARCH, "max_suppression": 0.02})))
    assert before.error is None
    used = before.results[1].step.params["columns"]["age"]["hierarchy"]
    assert "rows" not in used and used["rule"]["builder"] == "frequency"  # interval labels: grouped as categories


def test_reapplying_a_recipe_leaves_the_dataset_alone(services: Services, base: ViewState) -> None:
    """Re-applying never changes the open dataset's table."""
    frame = services.dataset("demo:people").frame
    snapshot = frame.copy()
    run = FixRuns(services).run(base.updated(fix=(AGE, SUPPRESS)))
    fixes.reapply_recipe(frame, run.recipe.to_json())
    pd.testing.assert_frame_equal(frame, snapshot)
