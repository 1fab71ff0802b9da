"""Slow clients cannot hold the production server: ``/api/health`` answers at once while 40 connections stall.

``gunicorn app:server`` runs with 2 workers and the shipped configuration (``gunicorn.conf.py``: the
:class:`~dashboard.server.SlowClientWorker`, 8 threads each, so 16 threads in all) on a free port of 127.0.0.1.
40 connections, more than there are threads, each send 12 bytes and stall: half a request line, or the head of a
5,000-byte request and 12 bytes of its body. Two more announce a 50 MB upload, two a 512 KB callback (too large to
be collected before it takes a thread), and send a few bytes of it. Asserted: ``/api/health`` answers every time
within 2 seconds while they hang; the stalled small requests are answered 408 within ``PRIVDASH_READ_TIMEOUT`` plus
gunicorn's keep-alive; the stalled uploads and large callbacks get a 408 with a message. Everything is bounded:
sockets time out, loops stop at their deadlines, only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from dashboard.server import BUFFERED_BODY
from tests.integration.gunicorn import Gunicorn, running_gunicorn

WORKERS = 2
SLOW = 40
READ_TIMEOUT = 3.0
#: gunicorn.conf.py's keepalive: the longest pause between two packets before gunicorn drops the connection.
KEEPALIVE = 5.0
#: gunicorn's sync workers made /api/health wait 38 s behind six such clients; this worker answers in milliseconds (the
#: bound leaves room for a loaded machine).
HEALTH_SECONDS = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    root = tmp_path_factory.mktemp("slow")
    env = {
        **os.environ,
        "PRIVDASH_STORE_DIR": str(root / "store"),
        "PRIVDASH_CACHE_DIR": str(root / "cache"),
        "PRIVDASH_READ_TIMEOUT": str(READ_TIMEOUT),
    }
    with running_gunicorn(env, WORKERS) as server:
        for _ in range(4 * WORKERS):  # every worker has served a first request (which sets things up)
            requests.get(server.base + "/api/health", timeout=30).raise_for_status()
        yield server


def address(server: Gunicorn) -> tuple[str, int]:
    parts = urlsplit(server.base)
    assert parts.hostname == "127.0.0.1" and parts.port is not None
    return parts.hostname, parts.port


def stall(server: Gunicorn, data: bytes) -> socket.socket:
    """A connection that sends ``data`` and then nothing."""
    sock = socket.create_connection(address(server), timeout=5)
    sock.sendall(data)
    return sock


def answer(sock: socket.socket, deadline: float) -> bytes:
    """What the server sends until it closes the connection, or until ``deadline`` (then the text so far)."""
    received = b""
    while time.monotonic() < deadline:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            data = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return received
        if not data:
            return received
        received += data
    raise AssertionError(f"still open at the deadline; received {received[:200]!r}")


def health_latencies(server: Gunicorn, seconds: float) -> list[float]:
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        response = requests.get(server.base + "/api/health", timeout=30)
        latencies.append(time.monotonic() - start)
        assert response.status_code == 200 and response.json() == {"status": "ok"}
        time.sleep(0.2)
    return latencies


def test_stalled_clients_do_not_hold_the_workers(server: Gunicorn) -> None:
    head = b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n\r\n"
    upload = (
        b"POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        b"Content-Length: 50000000\r\n\r\n--b\r\nContent-"
    )
    with contextlib.ExitStack() as stack:
        slow = [stack.enter_context(stall(server, b"POST /api/up" if i % 2 else head + b"x" * 12)) for i in range(SLOW)]
        uploads = [stack.enter_context(stall(server, upload)) for _ in range(2)]
        # A callback too large to be collected before it takes a thread: read there, against the deadline.
        large = (
            b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {2 * BUFFERED_BODY}\r\n\r\n".encode()
            + b'{"output": '
        )
        callbacks = [stack.enter_context(stall(server, large)) for _ in range(2)]
        opened = time.monotonic()
        latencies = health_latencies(server, READ_TIMEOUT + 2.0)
        print(
            f"/api/health with {SLOW + 2} stalled connections: max {max(latencies):.3f} s over {len(latencies)}",
            [round(x, 3) for x in latencies],
        )
        assert max(latencies) < HEALTH_SECONDS, latencies
        deadline = opened + READ_TIMEOUT + KEEPALIVE + 10
        answers = [answer(sock, deadline) for sock in slow]
        assert all(text.startswith(b"HTTP/1.1 408 Request Timeout") for text in answers), answers[:3]
        assert time.monotonic() - opened < READ_TIMEOUT + KEEPALIVE + 3
        for sock in uploads:
            text = answer(sock, deadline)
            assert text.startswith(b"HTTP/1.1 408"), text[:300]
            body = json.loads(text.split(b"\r\n\r\n", 1)[1])
            assert "too slowly" in body["error"]
        for sock in callbacks:
            text = answer(sock, deadline)
            assert text.startswith(b"HTTP/1.1 408"), text[:300]
            assert "too slowly" in json.loads(text.split(b"\r\n\r\n", 1)[1])["error"]
    # And the server is whole afterwards.
    assert max(health_latencies(server, 1.0)) < HEALTH_SECONDS
    assert "Traceback" not in "".join(server.log)


def test_a_request_that_arrives_in_pieces_in_time_is_served(server: Gunicorn) -> None:
    """A head and a small body sent in three packets, well within the read timeout, get their answer."""
    body = json.dumps({"output": "nope.children", "outputs": {"id": "nope", "property": "children"}, "inputs": []})
    head = (
        "POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with stall(server, head[:20]) as sock:
        time.sleep(0.5)
        sock.sendall(head[20:])
        time.sleep(0.5)
        sock.sendall(body.encode())
        text = answer(sock, time.monotonic() + 10)
    assert text.startswith(b"HTTP/1.1 400"), text[:300]
    assert b"There is no callback" in text


def test_the_shipped_configuration_is_what_runs(server: Gunicorn) -> None:
    log = "".join(server.log)
    assert "Using worker: dashboard.server.SlowClientWorker" in log, log[-2000:]
    assert Path(__file__).resolve().parents[2].joinpath("gunicorn.conf.py").is_file()


def test_a_client_waiting_for_100_continue_is_told_to_go_on(server: Gunicorn) -> None:
    """curl sends a body over 1 KB only after ``100 Continue`` (or a second of silence): the worker does not wait for
    that body before the request gets its thread."""
    body = json.dumps({"output": "nope.children", "outputs": {"id": "nope", "property": "children"}, "inputs": []})
    head = (
        "POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
    ).encode()
    with stall(server, head) as sock:
        sock.settimeout(0.9)
        assert sock.recv(25).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(body.encode())
        text = answer(sock, time.monotonic() + 10)
    assert b"HTTP/1.1 400" in text and b"There is no callback" in text


def test_privdash_serve_with_workers_runs_the_production_configuration(tmp_path: Path) -> None:
    """``privdash serve --workers 1``, started outside the repository (no ``gunicorn.conf.py`` there), serves with the
    slow-client worker."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PRIVDASH_STORE_DIR": str(tmp_path / "store"), "PRIVDASH_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "dashboard", "--workers", "1", "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stderr=sink, stdout=sink, text=True)
        try:
            deadline = time.monotonic() + 60
            while "Booting worker" not in log.read_text() and time.monotonic() < deadline:
                assert process.poll() is None, log.read_text()
                time.sleep(0.2)
            response = requests.get(f"http://127.0.0.1:{port}/api/health", timeout=30)
            assert response.status_code == 200 and response.json() == {"status": "ok"}
            assert "Using worker: dashboard.server.SlowClientWorker" in log.read_text()
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def test_a_client_trickling_its_head_is_cut_at_the_read_timeout(server: Gunicorn) -> None:
    """One byte every half second never pauses long enough for gunicorn's keep-alive: the read timeout ends it."""
    head = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
    started = time.monotonic()
    received = b""
    with stall(server, head[:1]) as sock:
        sock.settimeout(0.5)
        for byte in head[1:41]:  # at most 20 s
            try:
                sock.sendall(bytes([byte]))
                received += sock.recv(4096)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if received:
                break
    seconds = time.monotonic() - started
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert READ_TIMEOUT <= seconds < READ_TIMEOUT + 3, seconds
