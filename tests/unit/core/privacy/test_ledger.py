"""The budget ledger: sequential composition per dataset, refusal when over budget, atomic JSON files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.dp.ledger import (
    SKETCH_SIZE,
    BudgetExceededError,
    BudgetLedger,
    TableFingerprint,
    check_identity,
    file_sha256,
    frame_sha256,
    row_hashes,
)
from privdash.dp.mechanisms import PrivacyBudget
from privdash.errors import DataReadError, ParameterError

KEY = "a" * 64


def charge(
    ledger: BudgetLedger, epsilon: float, delta: float = 0.0, budget: PrivacyBudget | None = None
) -> BudgetLedger:
    return ledger.charge(
        KEY, PrivacyBudget(epsilon, delta), query="count", columns=(), mechanism="laplace", budget=budget
    )


def test_costs_add_up_until_the_budget_is_spent(tmp_path: Path) -> None:
    total = PrivacyBudget(1.0, 1e-6)
    ledger = charge(BudgetLedger(), 0.3, budget=total)
    ledger = charge(ledger, 0.3, 5e-7)
    ledger = charge(ledger, 0.4)  # 0.3 + 0.3 + 0.4 = 1.0 fits despite float rounding
    account = ledger.account(KEY)
    assert account.spent == pytest.approx((1.0, 5e-7))
    with pytest.raises(BudgetExceededError, match=r"exhausted.*Nothing was released"):
        charge(ledger, 0.01)
    ledger2 = charge(charge(BudgetLedger(), 0.1, 5e-7, total), 0.1, 5e-7)
    with pytest.raises(BudgetExceededError, match="δ"):
        charge(ledger2, 0.1, 1e-9)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    ledger = charge(BudgetLedger(), 0.5, budget=PrivacyBudget(2.0))
    ledger.save(path)
    again = BudgetLedger.load(path)
    assert again == ledger
    payload = json.loads(path.read_text(encoding="utf-8"))
    assert payload["datasets"][KEY]["spent"] == {"epsilon": 0.5, "delta": 0.0}
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.json"]  # no temporary file left behind
    assert BudgetLedger.load(tmp_path / "new.json") == BudgetLedger()


def test_budget_is_fixed_and_required(tmp_path: Path) -> None:
    ledger = charge(BudgetLedger(), 0.5, budget=PrivacyBudget(2.0))
    with pytest.raises(ParameterError, match="cannot be changed"):
        charge(ledger, 0.1, budget=PrivacyBudget(3.0))
    with pytest.raises(ParameterError, match="--budget"):
        BudgetLedger().account(KEY)


def test_corrupt_ledger_and_unwritable_folder(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataReadError, match="not a privdash ledger"):
        BudgetLedger.load(path)
    with pytest.raises(DataReadError, match="Cannot write"):
        BudgetLedger().save(tmp_path / "missing" / "ledger.json")


def test_fingerprints(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n", encoding="utf-8")
    assert file_sha256(path) == hashlib.sha256(b"a\n1\n").hexdigest()
    one, two = pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [1, 3]})
    assert frame_sha256(one) == frame_sha256(one.copy()) != frame_sha256(two)
    with pytest.raises(DataReadError):
        file_sha256(tmp_path / "absent.csv")


# --- dataset identity and fingerprints ------------------------------------------------------------------------------


def people(n: int = 1_000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": [f"p{seed}-{i}" for i in range(n)],
            "age": rng.integers(18, 90, size=n),
            "town": rng.choice(["Leeds", "York", "Bath"], size=n),
        }
    )


def test_the_fingerprint_ignores_row_and_column_order_and_number_types() -> None:
    table = people()
    fingerprint = TableFingerprint.of(table)
    shuffled = table.sample(frac=1, random_state=1).iloc[:, ::-1].astype({"age": float}).reset_index(drop=True)
    as_text = table.astype({"age": str})
    assert TableFingerprint.of(shuffled).digest == TableFingerprint.of(as_text).digest == fingerprint.digest
    assert len(fingerprint.sketch) == SKETCH_SIZE and fingerprint.rows == 1_000
    # One changed cell, one row fewer, one duplicated row or a renamed column is another table.
    changed = table.assign(age=table["age"].where(table.index != 5, 200))
    assert TableFingerprint.of(changed).digest != fingerprint.digest
    assert TableFingerprint.of(table.iloc[1:]).digest != fingerprint.digest
    assert TableFingerprint.of(pd.concat([table, table.iloc[:1]])).digest != fingerprint.digest
    assert TableFingerprint.of(table.rename(columns={"town": "city"})).digest != fingerprint.digest
    assert len(row_hashes(table)) == 1_000 and row_hashes(table).dtype == np.uint64


def test_overlap_estimates_the_rows_in_common() -> None:
    table = people(4_000)
    fingerprint = TableFingerprint.of(table)
    assert fingerprint.overlap(TableFingerprint.of(table.assign(age=table["age"].where(table.index != 5, 200)))) > 0.9
    assert fingerprint.overlap(TableFingerprint.of(table.sample(frac=0.5, random_state=2))) > 0.8
    assert fingerprint.overlap(TableFingerprint.of(people(4_000, seed=9))) < 0.1  # other people
    # 70% of the rows changed: about 30% in common (k = 256: standard error about 0.03).
    changed = table.assign(id=table["id"].where(table.index < 1_200, "new" + table["id"]))
    assert 0.15 < fingerprint.overlap(TableFingerprint.of(changed)) < 0.45
    # Small tables: the sketch holds every row, so the overlap is exact.
    small = TableFingerprint.of(table.iloc[:100])
    assert small.overlap(TableFingerprint.of(table.iloc[50:150])) == pytest.approx(0.5)
    # Duplicated rows are counted as often as they occur (a multiset).
    twice = TableFingerprint.of(pd.concat([table.iloc[:100]] * 2))
    assert small.overlap(twice) == 1.0 and twice.digest != small.digest


def opened(table: pd.DataFrame, identity: str = "town-2024") -> BudgetLedger:
    return BudgetLedger().charge(
        identity,
        PrivacyBudget(0.5),
        query="count",
        columns=(),
        mechanism="laplace",
        budget=PrivacyBudget(2.0),
        fingerprint=TableFingerprint.of(table),
    )


def test_resolve_recognises_copies_and_asks_before_a_new_budget() -> None:
    table = people()
    ledger = opened(table)
    copy = TableFingerprint.of(table.sample(frac=1, random_state=5))
    assert ledger.resolve(copy).identity == "town-2024" and ledger.resolve(copy).how == "recognised"
    with pytest.raises(ParameterError, match="were released under the dataset identity 'town-2024'"):
        ledger.resolve(copy, "fresh")
    near = TableFingerprint.of(table.iloc[10:])
    defaulted = ledger.resolve(near)
    assert (defaulted.identity, defaulted.how) == ("town-2024", "near-copy") and defaulted.overlap is not None
    assert "Charged to 'town-2024'" in defaulted.warnings[0]
    with pytest.raises(ParameterError, match="--distinct-population"):
        ledger.resolve(near, "fresh")
    confirmed = ledger.resolve(near, "fresh", confirm_distinct=True)
    assert confirmed.identity == "fresh" and "shares about" in confirmed.warnings[0]
    assert ledger.resolve(near, "town-2024").warnings == ()  # declared as the same people: nothing to warn of
    other = TableFingerprint.of(people(seed=11))
    with pytest.raises(ParameterError, match="--dataset-identity NAME"):
        ledger.resolve(other)
    assert ledger.resolve(other, default="Bath survey").identity == "Bath survey"
    assert ledger.resolve(other, " Bath survey ").identity == "Bath survey"


def test_charging_records_the_table_once_and_round_trips(tmp_path: Path) -> None:
    table = people()
    fingerprint = TableFingerprint.of(table)
    ledger = opened(table).charge(
        "town-2024", PrivacyBudget(0.25), query="count", columns=(), mechanism="laplace", fingerprint=fingerprint
    )
    account = ledger.account("town-2024")
    assert len(account.tables) == 1 and account.holds(fingerprint) and account.spent == (0.75, 0.0)
    assert {entry.table for entry in account.entries} == {fingerprint.digest}
    ledger.save(tmp_path / "ledger.json")
    again = BudgetLedger.load(tmp_path / "ledger.json")
    assert again == ledger
    assert again.recognise(TableFingerprint.of(table.iloc[::-1])) == "town-2024"


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "empty"), ("   ", "empty"), ("a\nb", "control character"), ("x" * 201, "201 characters")],
)
def test_bad_identities(name: str, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        check_identity(name)
    assert check_identity("Adult census 1994") == "Adult census 1994"


def test_version_1_ledgers_keep_their_spending(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    release = {"query": "count", "columns": [], "mechanism": "laplace", "epsilon": 0.5, "delta": 0.0, "time": "t"}
    payload = {"version": 1, "datasets": {KEY: {"budget": {"epsilon": 1.0, "delta": 0.0}, "releases": [release]}}}
    path.write_text(json.dumps(payload), encoding="utf-8")
    ledger = BudgetLedger.load(path)
    fingerprint = TableFingerprint.of(people())
    assert ledger.recognise(fingerprint) is None
    assert ledger.recognise(fingerprint, aliases=(KEY,)) == KEY
    resolution = ledger.resolve(fingerprint, aliases=("b" * 64, KEY))
    assert resolution.identity == KEY and ledger.account(KEY).remaining == (0.5, 0.0)


@pytest.mark.parametrize(
    "text",
    ["[]", '{"version": 7, "datasets": {}}', '{"datasets": {"x": {"budget": {"epsilon": "a"}}}}', "[" * 50_000],
)
def test_files_that_are_not_ledgers(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ledger.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataReadError, match="ledger"):
        BudgetLedger.load(path)
    with pytest.raises(DataReadError, match="folder"):
        BudgetLedger.load(tmp_path)
    path.write_text("{}", encoding="utf-8")
    path.chmod(0o400)
    with pytest.raises(DataReadError, match="read-only"):
        BudgetLedger().save(path)
