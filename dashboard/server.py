"""The production server's worker: gunicorn's threaded worker, holding a thread only for requests that have arrived.

gunicorn's ``sync`` worker reads a request in its only thread, and its ``gthread`` worker gives a connection a thread
as soon as its first bytes arrive: either way a handful of clients that send a few bytes and then stall (a
"slowloris", or a phone losing its signal mid-request) hold every thread, and ``/api/health`` waits for them. This
worker (:class:`SlowClientWorker`, set by the shipped gunicorn configuration :mod:`dashboard.gunicorn_conf`)
collects each request's head, and a body of up to :data:`BUFFERED_BODY` bytes (every callback), on the worker's
event loop without a thread; a request gets a thread only once that much has arrived. A client that takes longer
than ``PRIVDASH_READ_TIMEOUT`` seconds for it, or pauses longer than gunicorn's ``keepalive`` between two packets,
gets ``408 Request Timeout`` and is disconnected. A larger body (an upload) is read in
the thread, but must keep arriving at :data:`MIN_BODY_RATE` bytes per second on average after the first
``PRIVDASH_READ_TIMEOUT`` seconds; a slower one is cut (the upload route answers 408).

gunicorn closes a finished connection on the worker's event loop, lingering up to 2 seconds for a client that does not
close its side; this worker closes it in the request's thread instead, so that no client can pause the event loop.

What remains: a client that keeps sending a large body at the minimal rate holds a thread for as long as it keeps
sending (it pays for that with its own bandwidth); for a server on the internet, a buffering reverse proxy in front
(nginx's default ``proxy_request_buffering on``) takes that too.

Only plain HTTP/1 is collected this way (TLS belongs to the proxy in front); other connections are served as
gunicorn's threaded worker serves them.
"""

from __future__ import annotations

import re
import select
import time
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.http.errors import NoMoreData
from gunicorn.http.unreader import SocketUnreader
from gunicorn.workers import gthread

from privdash.application.settings import Settings

__all__ = ["BUFFERED_BODY", "MIN_BODY_RATE", "ReadTimedOut", "SlowClientWorker", "run_production"]

#: Bodies up to this many bytes are collected before the request gets a thread (a callback's body; the view state of a
#: table of 2,000 columns takes about 100 KB). It is held in memory per connection while it arrives, so it is small.
BUFFERED_BODY = 256 * 1024
#: A request head longer than this is handed to gunicorn's parser as it is (which refuses it with its limits).
_MAX_HEAD = 64 * 1024
#: The slowest average rate, in bytes per second, at which a larger body (an upload) may arrive.
MIN_BODY_RATE = 16_000
_RECV = 256 * 1024
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d{1,18})[ \t]*\r?$", re.I | re.M)
_CHUNKED = re.compile(rb"^transfer-encoding[ \t]*:.*chunked", re.I | re.M)
#: A client that asks to be told to go on (curl, for bodies over 1 KB) sends its body only once answered.
_EXPECT = re.compile(rb"^expect[ \t]*:[ \t]*100-continue", re.I | re.M)
_TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


class ReadTimedOut(NoMoreData):
    """A request's body stopped arriving, or arrived slower than :data:`MIN_BODY_RATE` (an ``OSError``)."""

    def __str__(self) -> str:
        return "the request's body arrived too slowly"


class _DeadlineUnreader(SocketUnreader):
    """gunicorn's socket reader with a deadline: ``timeout`` seconds after ``started``, plus one second per
    :data:`MIN_BODY_RATE` bytes received."""

    started: float
    received: int
    timeout: float

    def chunk(self, size_hint: int | None = None) -> bytes:
        allowed = self.started + self.timeout + self.received / MIN_BODY_RATE
        wait = allowed - time.monotonic()
        if wait <= 0 or not _readable(self.sock, wait):
            raise ReadTimedOut()
        data: bytes = super().chunk(size_hint)
        self.received += len(data)
        return data


def _readable(sock: Any, timeout: float) -> bool:
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(max(timeout, 0.0) * 1000))


def _already_closed(graceful: bool = False) -> None:
    """Stands in for ``TConn.close`` once the connection was closed in its thread."""


def _send_timeout(conn: Any) -> None:
    """Tell a client whose request did not arrive in time (without waiting: the socket is not blocking)."""
    try:
        conn.sock.setblocking(False)
        conn.sock.send(_TIMEOUT_RESPONSE)
    except OSError:
        pass


def _complete(buffer: bytes) -> bool:
    """Whether ``buffer`` holds a request's whole head, and its whole body when that is small and of known length (and
    not held back until the server answers ``100 Continue``)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return len(buffer) > _MAX_HEAD
    head = buffer[:end]
    if _CHUNKED.search(head) or _EXPECT.search(head):
        return True
    found = _CONTENT_LENGTH.search(head)
    length = int(found.group(1)) if found else 0
    return length > BUFFERED_BODY or len(buffer) - end - 4 >= length


class SlowClientWorker(gthread.ThreadWorker):
    """gunicorn's threaded worker that collects a request's head and small body before it takes a thread."""

    read_timeout: float = Settings.read_timeout

    def init_process(self) -> None:
        self.read_timeout = Settings.from_env().read_timeout
        super().init_process()

    def murder_pending(self) -> None:
        """Answer 408 to the connections whose partial request gunicorn is about to drop for pausing too long."""
        now = time.monotonic()
        for conn in list(self.pending_conns):
            if conn.timeout is not None and conn.timeout <= now and getattr(conn, "privdash_buffer", None):
                conn.privdash_buffer = None
                _send_timeout(conn)
        super().murder_pending()

    def handle(self, conn: Any) -> Any:
        result = self._collect_and_handle(conn)
        if result is False:  # closed here, in this thread: a lingering close must not stop the event loop
            conn.close(graceful=True)
            conn.close = _already_closed
        return result

    def _collect_and_handle(self, conn: Any) -> Any:
        if self.cfg.is_ssl or conn.is_http2:
            return super().handle(conn)
        buffer: bytearray | None = getattr(conn, "privdash_buffer", None)
        if buffer is None:
            held = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
            buffer = conn.privdash_buffer = bytearray(held)
            conn.privdash_started = time.monotonic()
        closed = False
        conn.sock.setblocking(False)
        try:
            while len(buffer) <= BUFFERED_BODY + _MAX_HEAD:
                data = conn.sock.recv(_RECV)
                if not data:
                    closed = True
                    break
                buffer += data
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            closed = True
        if closed and not _complete(bytes(buffer)):
            conn.privdash_buffer = None
            return False
        if not _complete(bytes(buffer)):
            if time.monotonic() - conn.privdash_started > self.read_timeout:
                conn.privdash_buffer = None
                _send_timeout(conn)
                conn.close()
                conn.close = _already_closed
                return None  # (not False: there is nothing left to close gracefully)
            return gthread._DEFER  # back to the event loop until more arrives, without a thread
        started = conn.privdash_started
        conn.privdash_buffer = None
        conn.init()
        unreader = conn.parser.unreader
        unreader.__class__ = _DeadlineUnreader
        unreader.started, unreader.received, unreader.timeout = started, len(buffer), self.read_timeout
        unreader.unread(bytes(buffer))
        conn.data_ready = True
        return super().handle(conn)


class _Production(BaseApplication):
    """gunicorn serving :mod:`dashboard.wsgi` with :mod:`dashboard.gunicorn_conf` (``privdash serve
    --workers``)."""

    def __init__(self, bind: str, workers: int) -> None:
        self.bind, self.workers = bind, workers
        super().__init__()

    def load_config(self) -> None:
        from dashboard import gunicorn_conf

        for name in ("worker_class", "threads", "keepalive", "timeout"):
            self.cfg.set(name, getattr(gunicorn_conf, name))
        self.cfg.set("bind", [self.bind])
        self.cfg.set("workers", self.workers)

    def load(self) -> Any:
        from dashboard.wsgi import server

        return server


def run_production(host: str, port: int, workers: int) -> None:
    """Serve the dashboard on gunicorn with the shipped configuration until stopped (SIGTERM or Ctrl+C)."""
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    _Production(bind, workers).run()
