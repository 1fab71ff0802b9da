"""The budget ledger: sequential composition per dataset, refusal when over budget, atomic JSON files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from dashboard.core.errors import DataReadError, ParameterError
from dashboard.core.privacy.ledger import BudgetExceededError, BudgetLedger, file_sha256, frame_sha256
from dashboard.core.privacy.mechanisms import PrivacyBudget

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
