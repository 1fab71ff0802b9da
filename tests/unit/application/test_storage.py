"""Server-side dataset store: unguessable ids, per-session isolation, expiry, atomic writes, sweeps, quotas."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from privdash.application.storage import (
    TEMP_GRACE,
    ClientLedger,
    DatasetExpired,
    DatasetNotFound,
    DatasetStore,
    Quota,
    QuotaExceeded,
    Sweeper,
    client_digest,
    is_upload_id,
    owner_digest,
    parquet_safe,
)

ALICE = "a" * 40
BOB = "b" * 40


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"age": [30, 41, None], "sex": ["F", "M", None]})


def entries(root: Path) -> list[str]:
    """The store folder's entries, without its lock file."""
    return sorted(p.name for p in root.iterdir() if p.name != ".lock")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_save_and_load_round_trip(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    info = store.save(frame, session=ALICE, filename="people.csv", contract={"field_metadata": []})
    assert len(info.id) == 22 and info.rows == 3 and info.columns == ("age", "sex")
    loaded = store.load(info.id)
    pd.testing.assert_frame_equal(loaded.reset_index(drop=True), frame, check_dtype=False)
    assert store.info(info.id).filename == "people.csv"
    # One folder per dataset, holding the table and its metadata; nothing else is left behind.
    assert entries(tmp_path) == [info.id]
    assert sorted(p.name for p in (tmp_path / info.id).iterdir()) == ["data.parquet", "meta.json"]
    assert info.bytes == sum(p.stat().st_size for p in (tmp_path / info.id).iterdir())


def test_only_the_servers_user_can_read_the_store(tmp_path: Path, frame: pd.DataFrame) -> None:
    root = tmp_path / "store"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    store = DatasetStore(root)
    info = store.save(frame, session=ALICE, filename="people.csv")
    assert mode(root) == 0o700 and mode(root / info.id) == 0o700
    assert {mode(p) for p in (root / info.id).iterdir()} == {0o600}
    assert mode(root / ".lock") == 0o600


def test_ids_are_random_and_never_reused(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    ids = {store.save(frame, session=ALICE, filename="f.csv").id for _ in range(20)}
    assert len(ids) == 20 and all(is_upload_id(i) for i in ids)


@pytest.mark.parametrize(
    "bad",
    ["../../etc/passwd", "short", "", "a" * 22 + "/", "demo:people", "a" * 5000, "demo:../..", "abc\x00" * 6, ".lock"],
)
def test_malformed_ids_never_touch_the_file_system(tmp_path: Path, bad: str) -> None:
    store = DatasetStore(tmp_path)
    with pytest.raises(DatasetNotFound, match="does not name a valid dataset"):
        store.load(bad)
    assert not is_upload_id(bad)


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
    assert entries(tmp_path) == [theirs.id]


def test_the_owner_is_stored_as_a_digest(tmp_path: Path, frame: pd.DataFrame) -> None:
    info = DatasetStore(tmp_path).save(frame, session=ALICE, filename="f.csv")
    text = (tmp_path / info.id / "meta.json").read_text()
    assert ALICE not in text and owner_digest(ALICE) in text


def test_datasets_expire(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, ttl=60)
    now = time.time()
    info = store.save(frame, session=ALICE, filename="f.csv", now=now)
    assert store.info(info.id, now=now + 59).id == info.id
    with pytest.raises(DatasetExpired, match="expired"):
        store.load(info.id, now=now + 61)
    assert entries(tmp_path) == []


def test_sweep_removes_expired_datasets_of_every_session(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, ttl=10)
    now = time.time()
    store.save(frame, session=ALICE, filename="old.csv", now=now - 100)
    store.save(frame, session=BOB, filename="new.csv", now=now - 100)
    assert store.sweep(now=now - 95, force=True) == 0
    assert store.sweep(now=now, force=True) == 2
    old = store.save(frame, session=ALICE, filename="old.csv", now=now - 100)
    new = store.save(frame, session=BOB, filename="new.csv", now=now)  # saving sweeps too
    assert entries(tmp_path) == [new.id] and old.id != new.id


def test_sweep_removes_leftovers_and_malformed_entries_and_nothing_else(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    good = store.save(frame, session=ALICE, filename="good.csv")
    now = time.time()
    old = now - TEMP_GRACE - 60
    # A writer killed before its single rename: a temporary folder (old: deleted; young: maybe alive, kept).
    (tmp_path / ".tmp-dead").mkdir()
    (tmp_path / ".tmp-dead" / "data.parquet").write_bytes(b"PAR1")
    os.utime(tmp_path / ".tmp-dead", (old, old))
    (tmp_path / ".tmp-live").mkdir()
    # A deleter killed mid-way, and dataset folders with missing or damaged parts.
    (tmp_path / ".trash-half").mkdir()
    no_meta = tmp_path / ("N" * 22)
    no_meta.mkdir()
    (no_meta / "data.parquet").write_bytes(b"PAR1")
    bad_meta = tmp_path / ("M" * 22)
    bad_meta.mkdir()
    (bad_meta / "meta.json").write_text("{not json")
    no_data = tmp_path / ("D" * 22)
    no_data.mkdir()
    (no_data / "meta.json").write_text((tmp_path / good.id / "meta.json").read_text().replace(good.id, "D" * 22))
    wrong_id = tmp_path / ("W" * 22)
    wrong_id.mkdir()
    for name in ("meta.json", "data.parquet"):
        (wrong_id / name).write_bytes((tmp_path / good.id / name).read_bytes())  # says it is the good dataset
    (tmp_path / ("F" * 22)).write_text("a file where a folder belongs")
    # Files that are not the store's own: never touched.
    (tmp_path / "README.txt").write_text("the operator's note")
    (tmp_path / "notes").mkdir()
    assert store.sweep(force=True) == 0
    assert entries(tmp_path) == sorted([".tmp-live", "README.txt", "notes", good.id])
    assert store.load(good.id).shape == (3, 2)


def test_datasets_of_the_earlier_layout_are_moved_or_deleted(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    info = store.save(frame, session=ALICE, filename="f.csv")
    # Rebuild it as the earlier layout: <id>.parquet beside <id>.json.
    for name, suffix in (("data.parquet", ".parquet"), ("meta.json", ".json")):
        os.replace(tmp_path / info.id / name, tmp_path / f"{info.id}{suffix}")
    (tmp_path / info.id).rmdir()
    orphan = "O" * 22
    (tmp_path / f"{orphan}.parquet").write_bytes(b"PAR1")  # its metadata was never written
    (tmp_path / f"{'T' * 22}.json.tmp").write_text("{")
    store.sweep(force=True)
    assert entries(tmp_path) == [info.id]
    assert store.load(info.id).shape == (3, 2) and [i.id for i in store.owned(ALICE)] == [info.id]


def test_a_failed_save_leaves_nothing(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, quota=Quota(session_datasets=1))
    store.save(frame, session=ALICE, filename="1.csv")
    with pytest.raises(QuotaExceeded):
        store.save(frame, session=ALICE, filename="2.csv")
    assert len(entries(tmp_path)) == 1


def test_session_quota_of_datasets(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, quota=Quota(session_datasets=2))
    first = store.save(frame, session=ALICE, filename="1.csv")
    store.save(frame, session=ALICE, filename="2.csv")
    message = "You have 2 uploads, the most a session may keep; delete one or wait until they expire."
    with pytest.raises(QuotaExceeded, match=message):
        store.check_quota(ALICE)
    with pytest.raises(QuotaExceeded, match=message):
        store.save(frame, session=ALICE, filename="3.csv")
    store.check_quota(BOB)  # other sessions are not affected
    store.save(frame, session=BOB, filename="1.csv")
    store.delete(first.id, session=ALICE)
    store.save(frame, session=ALICE, filename="3.csv")


def test_session_quota_of_bytes(tmp_path: Path) -> None:
    wide = pd.DataFrame({"text": [f"value-{i:07d}-" * 20 for i in range(20_000)]})
    store = DatasetStore(tmp_path)
    size = store.save(wide, session=BOB, filename="probe.csv").bytes
    limited = DatasetStore(tmp_path / "limited", quota=Quota(session_bytes=int(size * 1.5)))
    limited.save(wide, session=ALICE, filename="1.csv")
    with pytest.raises(QuotaExceeded, match=r"This table needs .* MB, but your uploads use .* MB of the .* MB a sess"):
        limited.save(wide, session=ALICE, filename="2.csv")
    full = DatasetStore(tmp_path / "full")
    full.quota = Quota(session_bytes=full.save(wide, session=ALICE, filename="1.csv").bytes)
    with pytest.raises(QuotaExceeded, match=r"^Your uploads use .* MB of the .* MB a session may keep; delete one"):
        full.check_quota(ALICE)


def test_total_quota(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    size = store.save(frame, session=ALICE, filename="1.csv").bytes
    store.quota = Quota(total_bytes=2 * size + 100)
    store.save(frame, session=BOB, filename="2.csv")
    with pytest.raises(QuotaExceeded, match="The server's upload store is full"):
        store.save(frame, session="c" * 40, filename="3.csv")


def test_expired_datasets_do_not_count(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, ttl=10, quota=Quota(session_datasets=1))
    now = time.time()
    store.save(frame, session=ALICE, filename="old.csv", now=now - 100)
    store.check_quota(ALICE, now=now)


def test_a_replaced_dataset_makes_room_and_is_deleted(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, quota=Quota(session_datasets=1))
    old = store.save(frame, session=ALICE, filename="book.xlsx")
    new = store.save(frame, session=ALICE, filename="book.xlsx", replaces=old.id)
    assert entries(tmp_path) == [new.id]
    theirs = store.save(frame, session=BOB, filename="theirs.xlsx")
    with pytest.raises(QuotaExceeded):  # another session's dataset is never replaced, so it makes no room
        store.save(frame, session=ALICE, filename="x.xlsx", replaces=theirs.id)
    assert store.load(theirs.id).shape == (3, 2)


def test_the_original_file_is_kept_for_workbooks_with_several_sheets(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    book = store.save(frame, session=ALICE, filename="b.xlsx", original=b"PK..", sheet="A", sheets=("A", "B"))
    assert store.original(book.id) == b"PK.." and book.has_original and store.info(book.id).sheets == ("A", "B")
    single = store.save(frame, session=ALICE, filename="c.xlsx", original=b"PK..", sheet="A", sheets=("A",))
    assert not (tmp_path / single.id / "original").exists()
    with pytest.raises(DatasetNotFound, match="no longer kept"):
        store.original(single.id)


def test_each_process_caches_parsed_tables_by_id_and_modification_time(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path, cache_items=1)
    first = store.save(frame, session=ALICE, filename="1.csv")
    second = store.save(frame, session=ALICE, filename="2.csv")
    a = store.load(first.id)
    assert store.load(first.id) is a
    store.load(second.id)  # evicts the first
    assert store.load(first.id) is not a
    path = tmp_path / first.id / "data.parquet"
    frame.assign(age=[1, 2, 3]).to_parquet(path, index=False)
    stat_result = path.stat()
    os.utime(path, ns=(stat_result.st_atime_ns, stat_result.st_mtime_ns + 1_000_000))
    assert store.load(first.id)["age"].tolist() == [1, 2, 3]


def test_a_damaged_table_is_reported(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path)
    info = store.save(frame, session=ALICE, filename="f.csv")
    (tmp_path / info.id / "data.parquet").write_bytes(b"not parquet")
    with pytest.raises(DatasetNotFound, match="damaged"):
        store.load(info.id)
    meta = tmp_path / info.id / "meta.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "expires": "soon"}))
    with pytest.raises(DatasetNotFound, match="damaged"):
        store.info(info.id)


def test_another_store_on_the_same_folder_sees_the_same_datasets(tmp_path: Path, frame: pd.DataFrame) -> None:
    info = DatasetStore(tmp_path).save(frame, session=ALICE, filename="f.csv")
    other_worker = DatasetStore(tmp_path)
    assert other_worker.load(info.id).shape == (3, 2)
    assert [i.id for i in other_worker.owned(ALICE)] == [info.id]


def test_the_background_sweeper_deletes_expired_uploads_on_its_own(tmp_path: Path, frame: pd.DataFrame) -> None:
    store = DatasetStore(tmp_path / "a", ttl=0.5)
    other = DatasetStore(tmp_path / "b", ttl=3600)
    expired = store.save(frame, session=ALICE, filename="f.csv")
    kept = other.save(frame, session=ALICE, filename="f.csv")
    try:
        thread = Sweeper.start(store, 0.2)
        assert Sweeper.start(other, 60) is thread and thread.daemon  # one thread per process
        deadline = time.monotonic() + 10
        while (tmp_path / "a" / expired.id).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not (tmp_path / "a" / expired.id).exists()  # no request touched the store
        assert (tmp_path / "b" / kept.id).exists()
        Sweeper.forget(store)
        assert Sweeper.interval() > 0.2  # the shortest interval of the stores still registered
    finally:
        Sweeper.forget(store)
        Sweeper.forget(other)


def test_parquet_safe_turns_mixed_object_columns_into_text() -> None:
    mixed = pd.DataFrame({1: pd.Series([1, "a", None], dtype=object), "b": [1.0, 2.0, 3.0]})
    safe = parquet_safe(mixed)
    assert list(safe.columns) == ["1", "b"]
    assert safe["1"].tolist()[:2] == ["1", "a"] and pd.isna(safe["1"].iloc[2])
    assert safe["b"].dtype == "float64"


def test_ttl_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DatasetStore(tmp_path, ttl=0)


def test_the_client_quota_counts_every_session_of_an_address(tmp_path: Path) -> None:
    store = DatasetStore(tmp_path, quota=Quota(session_datasets=10, client_datasets=2))
    client = client_digest("198.51.100.7")
    frame = pd.DataFrame({"a": [1, 2]})
    for session in ("s" * 30, "t" * 30):
        store.save(frame, session=session, filename="a.csv", client=client)
    with pytest.raises(QuotaExceeded, match="Your network address keeps 2 uploads"):
        store.save(frame, session="u" * 30, filename="a.csv", client=client)
    with pytest.raises(QuotaExceeded, match="network address"):
        store.check_quota("v" * 30, client=client)
    store.save(frame, session="u" * 30, filename="a.csv", client=client_digest("198.51.100.8"))


def test_client_digests_group_an_ipv6_subscriber_and_never_hold_the_address() -> None:
    assert client_digest("2001:db8:1:2::1") == client_digest("2001:db8:1:2:ffff::9")
    assert client_digest("2001:db8:1:2::1") != client_digest("2001:db8:1:3::1")
    assert client_digest("::ffff:198.51.100.7") == client_digest("198.51.100.7") != client_digest("198.51.100.8")
    assert "198" not in client_digest("198.51.100.7") and len(client_digest(None)) == 64


def test_the_client_ledger_admits_a_limit_per_window(tmp_path: Path) -> None:
    ledger = ClientLedger(tmp_path / "clients", threading.Lock(), keep=100)
    client = client_digest("198.51.100.9")
    assert [ledger.admit(client, "upload", limit=3, window=60, now=1000 + i) for i in range(4)] == [True] * 3 + [False]
    assert ledger.admit(client, "upload", limit=3, window=60, now=1061)  # the first one left the window
    assert ledger.admit(client, "link", limit=1, window=60, now=1061)  # kinds are counted apart
    assert ledger.sweep(now=time.time() + 200) == 1 and not list((tmp_path / "clients").glob("*.json"))
