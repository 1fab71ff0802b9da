"""pyreadstat calls on a file's bytes in worker processes (a damaged file can crash ReadStat's C parser: the crash
ends the worker only), a pool of idle workers, and the sorting of the parser's failures into messages."""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from privdash.data.tables.common import _STATISTICAL_FORMATS, _reason
from privdash.data.tables.limits import ReadLimits, _Deadline
from privdash.errors import DataReadError, ParameterError

#: The pyreadstat function of each format.
_PYREADSTAT_READERS = {"spss": "read_sav", "stata": "read_dta", "sas7bdat": "read_sas7bdat", "xport": "read_xport"}
#: What pyreadstat reports (ReadStat's messages, or Python's decoding error) when text is not valid in its encoding.
_ENCODING_FAILURES = ("Unable to convert string to the requested encoding", "codec can't decode")
_UNKNOWN_ENCODING = "unsupported character set"
#: Read when the text is not valid in the declared encoding: the usual encoding of files written on Windows.
_FALLBACK_ENCODING = "WINDOWS-1252"


class _ReaderFailure(Exception):
    """A pyreadstat call raised: the exception's type name and message (it was raised in the worker process)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


#: Idle worker processes, kept for the next reads (at most ``_MAX_IDLE_WORKERS``; reads running at the same time
#: start more, which end after their read).
_IDLE_WORKERS: list[_Worker] = []
_WORKERS_LOCK = threading.Lock()
_MAX_IDLE_WORKERS = 2
#: A worker that read a file up to this size is kept for the next read (a larger read's memory is returned).
_REUSE_BYTES = 8 << 20


class _Worker:
    """A worker process running :mod:`privdash.data.tables._readstat_worker`, with a thread that collects its
    answers (so that waiting for one can time out, and the worker never blocks writing a large answer)."""

    def __init__(self) -> None:
        import queue
        import subprocess
        import sys

        from privdash.data.tables import _readstat_worker

        if not sys.executable:
            raise OSError("no Python executable to start a worker process with")
        # -P: the script's folder (this package's) is not put on the worker's module path, so no module of the
        # package can stand in for one the worker imports.
        self.process = subprocess.Popen(
            [sys.executable, "-P", _readstat_worker.__file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.owner = os.getpid()  # a forked copy of this process must not share the worker's pipes
        self.answers: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        from privdash.data.tables._readstat_worker import read_frame

        assert self.process.stdout is not None
        while True:
            try:
                payload = read_frame(self.process.stdout)
            except (OSError, ValueError):  # the pipe was closed by stop()
                payload = None
            self.answers.put(payload)
            if payload is None:
                return

    def request(self, value: object, timeout: float | None) -> tuple[Any, ...] | None:
        """The worker's answer to ``value``; None when it ended (crashed) before answering. Raises TimeoutError."""
        import queue

        from privdash.data.tables._readstat_worker import write_frame

        assert self.process.stdin is not None
        try:
            write_frame(self.process.stdin, value)
        except OSError:  # a broken pipe: the worker has ended
            return None
        try:
            payload = self.answers.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None
        if payload is None:
            return None
        try:
            return _worker_answer(payload)
        except Exception:  # not an answer the worker writes: it is not to be trusted any more
            self.stop()
            return None

    def exit_code(self) -> int | None:
        import subprocess

        try:
            return self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # still running after its output ended: it is stopped anyway
            return None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _stop_idle_workers() -> None:
    with _WORKERS_LOCK:
        workers = list(_IDLE_WORKERS)
        _IDLE_WORKERS.clear()
    for worker in workers:
        worker.stop()


atexit.register(_stop_idle_workers)


def _worker_answer(payload: bytes) -> tuple[Any, ...]:
    """Unpickle a worker's answer, allowing only the types it sends (plain values, numpy arrays, dates), so that a
    worker subverted by a malicious file cannot have this process run code."""
    import pickle

    allowed = {
        ("collections", "OrderedDict"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "time"),
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
    }

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) not in allowed:
                raise pickle.UnpicklingError(f"unexpected {module}.{name} in a worker's answer")
            return super().find_class(module, name)

    answer = Unpickler(io.BytesIO(payload)).load()
    assert isinstance(answer, tuple)
    return answer


class _Readstat:
    """pyreadstat calls on one file's bytes, in a worker process (in this process when none can be started)."""

    def __init__(self, raw: bytes, kind: str, label: str, limits: ReadLimits, deadline: _Deadline) -> None:
        self.raw = raw
        self.kind = kind
        self.label = label
        self.limits = limits
        self.deadline = deadline
        self.worker: _Worker | None = None
        self.healthy = False

    def __enter__(self) -> _Readstat:
        self.deadline.check()
        with _WORKERS_LOCK:
            idle = _IDLE_WORKERS.pop() if _IDLE_WORKERS else None
        if idle is not None and idle.owner != os.getpid():  # started by the process this one was forked from
            idle = None
        # An idle worker that has ended since is replaced by a new one; a new one that ends before it has read
        # anything cannot run here (no Python, or no pyreadstat, for it): then the file is read in this process.
        for worker in (idle, None):
            try:
                worker = worker or _Worker()
            except OSError:
                return self
            try:
                answer = worker.request(("open", self.raw), self._remaining())
            except TimeoutError:
                worker.stop()
                raise self.limits.exceeded("max_seconds", self.label, None) from None
            if answer is not None:
                self.worker, self.healthy = worker, True
                return self
            worker.stop()
        return self

    def __exit__(self, *exc_info: object) -> None:
        worker, self.worker = self.worker, None
        if worker is None:
            return
        if self.healthy and len(self.raw) <= _REUSE_BYTES and worker.process.poll() is None:
            with _WORKERS_LOCK:
                if len(_IDLE_WORKERS) < _MAX_IDLE_WORKERS:
                    _IDLE_WORKERS.append(worker)
                    return
        worker.stop()

    def call(self, **options: Any) -> tuple[Mapping[str, Any], dict[str, Any]]:
        """The data and metadata pyreadstat reads with ``options``; raises :class:`_ReaderFailure` when it fails."""
        from privdash.data.tables._readstat_worker import call

        reader = _PYREADSTAT_READERS[self.kind]
        # The time left is checked before and after each call: a call that ends as the time is up stops reading too
        # (a worker's answer may be there before the wait for it starts).
        self.deadline.check()
        answer = call(self.raw, reader, options) if self.worker is None else self._ask(("call", reader, options))
        self.deadline.check()
        if answer[0] == "error":
            raise _ReaderFailure(str(answer[1]), str(answer[2]))
        data, meta = answer[1], answer[2]
        assert isinstance(data, Mapping) and isinstance(meta, dict)
        return data, meta

    def _remaining(self) -> float | None:
        end = self.deadline.end
        return None if end is None else max(end - time.monotonic(), 0.0)

    def _ask(self, request: object) -> tuple[Any, ...]:
        assert self.worker is not None
        try:
            answer = self.worker.request(request, self._remaining())
        except TimeoutError:
            self.healthy = False
            raise self.limits.exceeded("max_seconds", self.label, None) from None
        if answer is None:
            self.healthy = False
            code = self.worker.exit_code()
            signal = f" with signal {-code}" if code is not None and code < 0 else ""
            raise DataReadError(
                f"{self.label} could not be read as {_STATISTICAL_FORMATS[self.kind]}: the file is damaged (its "
                f"parser stopped on its content{signal})."
            )
        return answer


def _readstat_read(
    readstat: _Readstat, encoding: str | None, *, given: bool, **options: Any
) -> tuple[Mapping[str, Any], dict[str, Any], str | None, list[str]]:
    """The data and metadata of one read, the encoding of the text, and a note when ``encoding`` is None (the
    declared one) and failed, and Windows-1252 was used instead. ``given``: the caller chose ``encoding`` (else it
    is None, or the fallback that the header needed). Every failure of the parser is a :class:`DataReadError` with a
    specific message."""
    label = readstat.label
    what = _STATISTICAL_FORMATS[readstat.kind]
    try:
        data, meta = _readstat_call(readstat, encoding, options)
        return data, meta, encoding or meta["file_encoding"], []
    except _EncodingFailure as failure:
        if given:
            raise DataReadError(
                f"{label}: its text is not valid {encoding}, the encoding given ({failure.reason}); give the "
                "encoding it was written in."
            ) from None
        reason = failure.reason
    except _UnknownEncoding:
        if given:
            raise ParameterError(
                f"encoding='{encoding}' is not a character encoding the reader knows; use an iconv name such as "
                "'UTF-8', 'WINDOWS-1252' or 'ISO-8859-15'."
            ) from None
        raise DataReadError(
            f"{label} declares a character encoding the reader does not know; give its encoding (encoding=...)."
        ) from None
    except _ParserFailure as failure:
        raise DataReadError(f"{label} could not be read as {what}: {failure.reason}.") from None
    declared = _declared_encoding(readstat) or "UTF-8"
    if encoding is None:
        try:
            data, meta = _readstat_call(readstat, _FALLBACK_ENCODING, options)
        except (_EncodingFailure, _UnknownEncoding) as failure:
            reason = str(failure)
        except _ParserFailure as failure:
            raise DataReadError(f"{label} could not be read as {what}: {failure.reason}.") from None
        else:
            note = (
                f"{label}: its text is not valid {declared}, the encoding it declares; it was read as Windows-1252. "
                "If names or labels look wrong, give the encoding it was written in (encoding=...)."
            )
            return data, meta, _FALLBACK_ENCODING, [note]
    raise DataReadError(
        f"{label}: its text is valid neither in {declared}, the encoding it declares, nor in Windows-1252 "
        f"({reason}); give the encoding it was written in (encoding=...)."
    )


class _EncodingFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _UnknownEncoding(Exception):
    pass


class _ParserFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _readstat_call(
    readstat: _Readstat, encoding: str | None, options: Mapping[str, Any]
) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """One pyreadstat call, its failures sorted: text not valid in the encoding, an unknown encoding, or a parser
    failure worded for the user."""
    try:
        return readstat.call(encoding=encoding, **options)
    except _ReaderFailure as failure:
        text = _reason(failure)
        if failure.name == "MemoryError":
            raise DataReadError(f"{readstat.label} is too large to read into memory.") from None
        if failure.name == "UnicodeDecodeError" or any(marker in text for marker in _ENCODING_FAILURES):
            raise _EncodingFailure(text) from None
        if _UNKNOWN_ENCODING in text:
            raise _UnknownEncoding(text) from None
        if failure.name == "OverflowError":
            raise _ParserFailure(
                f"it holds a date outside the years 1 to 9999, which cannot be represented, or it is damaged ({text})"
            ) from None
        if failure.name in ("ReadstatError", "PyreadstatError"):
            raise _ParserFailure(f"it is truncated or damaged ({text})") from None
        raise _ParserFailure(f"it is damaged ({failure.name}: {text})") from None


def _declared_encoding(readstat: _Readstat) -> str | None:
    """The encoding the file declares, from its header read with every text taken as Windows-1252 (where any byte
    is valid, so the header reads whatever its text)."""
    try:
        meta = readstat.call(metadataonly=True, encoding=_FALLBACK_ENCODING)[1]
    except _ReaderFailure:  # the header itself is damaged: the message does without the declared encoding
        return None
    declared = meta["file_encoding"]
    return str(declared) if declared and str(declared).upper() != _FALLBACK_ENCODING else None
