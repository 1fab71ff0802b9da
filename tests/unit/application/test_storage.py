"""Server-side dataset store: unguessable ids, per-session isolation, expiry, per-process cache."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pytest

from dashboard.application.storage import DatasetExpired, DatasetNotFound, DatasetStore, owner_digest, parquet_safe

ALICE = "a" * 40
BOB = "b" * 40


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"age": [30, 41, None], "sex": ["F", "M", None]})


def test_save_and_load_round_trip(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    info = store.save(frame, session=ALICE, filename="people.csv", contract={"field_metadata": []})
    assert len(info.id) == 22 and info.rows == 3 and info.columns == ("age", "sex")
    loaded = store.load(info.id)
    pd.testing.assert_frame_equal(loaded.reset_index(drop=True), frame, check_dtype=False)
    assert store.info(info.id).filename == "people.csv"
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".parquet"]


def test_ids_are_random_and_never_reused(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    ids = {store.save(frame, session=ALICE, filename="f.csv").id for _ in range(20)}
    assert len(ids) == 20


@pytest.mark.parametrize("bad", ["../../etc/passwd", "short", "", "a" * 22 + "/", "demo:people"])
def test_malformed_ids_never_touch_the_file_system(tmp_path: Path, bad: str) -> None:
    store = DatasetStore(tmp_path)
    with pytest.raises(DatasetNotFound):
        store.load(bad)


def test_unknown_id_has_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFound, match="upload the file again"):
        DatasetStore(tmp_path).info("A" * 22)


def test_sessions_only_see_and_delete_their_own_uploads(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    mine = store.save(frame, session=ALICE, filename="mine.csv")
    theirs = store.save(frame, session=BOB, filename="theirs.csv")
    assert [i.id for i in store.owned(ALICE)] == [mine.id]
    assert [i.id for i in store.owned(BOB)] == [theirs.id]
    with pytest.raises(DatasetNotFound):
        store.delete(mine.id, session=BOB)
    store.load(mine.id)  # the id itself is the capability a share link carries
    store.delete(mine.id, session=ALICE)
    with pytest.raises(DatasetNotFound):
        store.load(mine.id)


def test_the_owner_is_stored_as_a_digest(tmp_path: Path, frame: pd.DataFrame) -> None:
    info = DatasetStore(tmp_path).save(frame, session=ALICE, filename="f.csv")
    text = (tmp_path / f"{info.id}.json").read_text()
    assert ALICE not in text and owner_digest(ALICE) in text


def test_datasets_expire(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, ttl=60)
    now = time.time()
    info = store.save(frame, session=ALICE, filename="f.csv", now=now)
    assert store.info(info.id, now=now + 59).id == info.id
    with pytest.raises(DatasetExpired, match="expired"):
        store.load(info.id, now=now + 61)
    assert not list(tmp_path.glob(f"{info.id}.*"))


def test_sweep_removes_expired_datasets_of_every_session(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, ttl=10)
    now = time.time()
    old = store.save(frame, session=ALICE, filename="old.csv", now=now - 100)
    new = store.save(frame, session=BOB, filename="new.csv", now=now - 100)
    assert store.sweep(now=now - 95, force=True) == 0
    assert store.sweep(now=now, force=True) == 2
    old = store.save(frame, session=ALICE, filename="old.csv", now=now - 100)
    new = store.save(frame, session=BOB, filename="new.csv", now=now)  # saving sweeps too
    assert not (tmp_path / f"{old.id}.parquet").exists()
    assert (tmp_path / f"{new.id}.parquet").exists()


def test_each_process_caches_parsed_tables_by_id_and_modification_time(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, cache_items=1)
    first = store.save(frame, session=ALICE, filename="1.csv")
    second = store.save(frame, session=ALICE, filename="2.csv")
    a = store.load(first.id)
    assert store.load(first.id) is a
    store.load(second.id)  # evicts the first
    assert store.load(first.id) is not a
    path = tmp_path / f"{first.id}.parquet"
    frame.assign(age=[1, 2, 3]).to_parquet(path, index=False)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert store.load(first.id)["age"].tolist() == [1, 2, 3]


def test_another_store_on_the_same_folder_sees_the_same_datasets(tmp_path: Path, frame: pd.DataFrame) -> None:
    info = DatasetStore(tmp_path).save(frame, session=ALICE, filename="f.csv")
    other_worker = DatasetStore(tmp_path)
    assert other_worker.load(info.id).shape == (3, 2)
    assert [i.id for i in other_worker.owned(ALICE)] == [info.id]


def test_parquet_safe_turns_mixed_object_columns_into_text() -> None:
    mixed = pd.DataFrame({1: pd.Series([1, "a", None], dtype=object), "b": [1.0, 2.0, 3.0]})
    safe = parquet_safe(mixed)
    assert list(safe.columns) == ["1", "b"]
    assert safe["1"].tolist()[:2] == ["1", "a"] and pd.isna(safe["1"].iloc[2])
    assert safe["b"].dtype == "float64"


def test_ttl_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DatasetStore(tmp_path, ttl=0)
