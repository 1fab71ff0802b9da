"""Short share links: long view states kept on the server under an id, with the store's lifetime."""

from __future__ import annotations

import random
import stat
import string
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from privdash.application.links import LINK_KEY, MAX_STORED, LinkNotFound, LinkRefused, LinkStore
from privdash.application.state import QUERY_KEY, ViewState
from privdash.application.storage import ClientLedger, client_digest
from privdash.data.contract import ColumnRole, StatisticalType


def wide_state(columns: int = 600) -> ViewState:
    """A view of a wide survey table: column names as varied as real ones (so they do not compress away)."""
    rng = random.Random(columns)
    letters = string.ascii_lowercase
    names = [f"{''.join(rng.choices(letters, k=rng.randint(6, 14)))}_{i}" for i in range(columns)]
    roles = {name: rng.choice(list(ColumnRole)) for name in names}
    kinds = {name: rng.choice([StatisticalType.NUMERICAL, StatisticalType.NOMINAL]) for name in names}
    return ViewState(dataset="AbCdEfGhIjKlMnOpQrStUv", roles=roles, types=kinds, k=3)


def query(search: str) -> dict[str, list[str]]:
    return parse_qs(search.lstrip("?"))


def test_a_short_state_stays_in_the_url(tmp_path: Path) -> None:
    links = LinkStore(tmp_path / "links")
    state = ViewState(dataset="demo:people", k=7)
    assert links.search(state) == state.to_search() and links.search(ViewState()) == ""
    assert links.href(state, "/risk") == state.href("/risk")
    assert not (tmp_path / "links").exists()  # nothing stored


def test_a_long_state_is_stored_and_the_url_names_it(tmp_path: Path) -> None:
    links = LinkStore(tmp_path / "links")
    state = wide_state()
    assert len(state.to_search()) > 4_094  # too long for gunicorn's request line
    search = links.search(state)
    assert search.startswith(f"?{LINK_KEY}=") and len(links.href(state, "/data")) < 2_000
    assert links.state_from_query(query(search)) == state
    # The same state has the same id in every worker (a second store on the same folder), and is stored once.
    other_worker = LinkStore(tmp_path / "links")
    assert other_worker.search(state) == search
    assert other_worker.state_from_query({LINK_KEY: search.split("=", 1)[1]}) == state
    assert len(list((tmp_path / "links").glob("*.json"))) == 1
    assert links.search(wide_state(601)) != search


def test_the_stored_link_holds_the_encoded_state_only(tmp_path: Path) -> None:
    links = LinkStore(tmp_path / "links")
    state = wide_state()
    link_id = query(links.search(state))[LINK_KEY][0]
    stored = (tmp_path / "links" / f"{link_id}.json").read_text()
    assert state.encode() in stored and next(iter(state.roles)) not in stored  # the same value-free text as ?s=
    folder = tmp_path / "links"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {0o600}


@pytest.mark.parametrize("bad", ["../../etc/passwd", "x" * 5000, "short", "A" * 21 + "\x00"])
def test_a_malformed_link_id_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(LinkNotFound, match="damaged"):
        LinkStore(tmp_path).load(bad)


def test_an_unknown_or_expired_link_has_a_clear_message(tmp_path: Path) -> None:
    links = LinkStore(tmp_path / "links", ttl=60)
    with pytest.raises(LinkNotFound, match=r"expired or is unknown .* ask its sender for a new one"):
        links.load("A" * 22)
    now = time.time()
    link_id = query(links.search(wide_state(), now=now))[LINK_KEY][0]
    assert links.load(link_id, now=now + 59) == wide_state()
    with pytest.raises(LinkNotFound, match="expired"):
        links.load(link_id, now=now + 61)
    damaged = tmp_path / "links" / f"{'C' * 22}.json"
    damaged.write_text("{")
    with pytest.raises(LinkNotFound, match="damaged"):
        links.load("C" * 22)
    # Through the query of a page: the same messages, and ``s`` still works.
    with pytest.raises(LinkNotFound):
        links.state_from_query({LINK_KEY: ["A" * 22]})
    assert links.state_from_query({QUERY_KEY: ViewState(k=9).encode()}).k == 9


def test_a_link_in_use_does_not_expire(tmp_path: Path) -> None:
    links = LinkStore(tmp_path / "links", ttl=100)
    now = time.time()
    search = links.search(wide_state(), now=now)
    assert links.search(wide_state(), now=now + 60) == search  # opened again after half the lifetime: written again
    assert links.load(search.split("=", 1)[1], now=now + 150) == wide_state()


def test_sweep_deletes_expired_and_damaged_links_only(tmp_path: Path) -> None:
    links = LinkStore(tmp_path / "links", ttl=100)
    now = time.time()
    old = query(links.search(wide_state(), now=now - 200))[LINK_KEY][0]
    fresh = query(links.search(wide_state(601), now=now))[LINK_KEY][0]
    (tmp_path / "links" / f"{'D' * 22}.json").write_text("not json")
    (tmp_path / "links" / "operator-notes.txt").write_text("not ours")
    assert links.sweep(now=now) == 2
    names = sorted(p.name for p in (tmp_path / "links").iterdir())
    assert names == sorted([".key", f"{fresh}.json", "operator-notes.txt"]) and old != fresh


def test_past_the_cap_long_states_stay_in_the_url(tmp_path: Path) -> None:
    links = LinkStore(tmp_path / "links", max_links=1)
    assert links.search(wide_state()).startswith(f"?{LINK_KEY}=")
    assert links.search(wide_state(601)) == wide_state(601).to_search()


def test_a_state_longer_than_a_link_may_hold_is_refused_on_save(tmp_path: Path) -> None:
    store = LinkStore(tmp_path / "links")
    with pytest.raises(LinkRefused, match="more than a link may hold"):
        store.save("A" * (MAX_STORED + 1))
    assert not list((tmp_path / "links").glob("*.json"))


def test_new_links_are_counted_per_client_address(tmp_path: Path) -> None:
    address = {"now": client_digest("203.0.113.5")}
    ledger = ClientLedger(tmp_path / "clients", threading.Lock())
    store = LinkStore(tmp_path / "links", ledger=ledger, client_max_links=2, client=lambda: address["now"])
    first, second = store.save("a" * 2_000), store.save("b" * 2_000)
    assert first and second and store.save("a" * 2_000) == first  # the same state again is no new link
    with pytest.raises(LinkRefused, match="made 2 long links"):
        store.save("c" * 2_000)
    address["now"] = client_digest("2001:db8::1")
    assert store.save("c" * 2_000)
    address["now"] = client_digest("2001:db8::ffff")  # the same /64 network: the same client
    assert store.save("d" * 2_000)
    with pytest.raises(LinkRefused):
        store.save("e" * 2_000)
