"""The child process that runs pyreadstat for the table reader (:mod:`privdash.data.tables.readstat`).

ReadStat, the C library under pyreadstat, can crash on a damaged file (a segmentation fault kills the process that
runs it): run here, a crash ends this process alone, and the reader reports a damaged file. The reader also stops
this process when a reading time limit is up, which it could not do to a C call in its own process.

This file is run as a script (``python -P _readstat_worker.py``), never imported through the package: it imports only
the standard library, numpy and pyreadstat, so that it starts in a fraction of a second.

Protocol, on standard input and output: frames of an 8-byte little-endian length followed by a pickle.

* ``("open", raw)``: the bytes of the file to read next; answered ``("ok",)``.
* ``("call", reader, options)``: ``pyreadstat.<reader>(BytesIO(raw), output_format="dict", **options)``; answered
  ``("ok", data, metadata)`` or ``("error", exception type name, message)``. ``data`` maps each variable to its
  values: a float64 array for a numeric variable holding only numbers and missing values, else the list pyreadstat
  gives (texts, dates, times, tags of missing values, ``None`` for missing values). ``metadata`` is a dict of plain
  values (:data:`METADATA`).
* End of input: the process exits.
"""

from __future__ import annotations

import io
import pickle
import sys
from contextlib import suppress
from typing import IO, Any

#: The metadata attributes sent back (those the reader uses).
METADATA = (
    "column_names",
    "number_rows",
    "number_columns",
    "file_encoding",
    "readstat_variable_types",
    "variable_storage_width",
    "missing_ranges",
    "missing_user_values",
    "variable_value_labels",
)


def read_frame(stream: IO[bytes]) -> bytes | None:
    """One frame's pickle, or None at the end of the stream."""
    header = stream.read(8)
    if len(header) < 8:
        return None
    size = int.from_bytes(header, "little")
    payload = stream.read(size)
    return payload if len(payload) == size else None


def write_frame(stream: IO[bytes], value: object) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(payload).to_bytes(8, "little") + payload)
    stream.flush()


def call(raw: bytes, reader: str, options: dict[str, Any]) -> tuple[object, ...]:
    """Run one pyreadstat reader on ``raw``: ``("ok", data, metadata)`` or ``("error", type name, message)``."""
    import numpy as np
    import pyreadstat

    try:
        data, meta = getattr(pyreadstat, reader)(io.BytesIO(raw), output_format="dict", **options)
    except Exception as exc:  # every failure goes back to the reader, which words it for the user
        return ("error", type(exc).__name__, str(exc))
    metadata = {name: getattr(meta, name, None) for name in METADATA}
    types = metadata["readstat_variable_types"] or {}
    columns: dict[str, Any] = {}
    for name, values in data.items():
        columns[name] = values
        if types.get(name) != "string":
            with suppress(TypeError, ValueError):  # numbers and None (NaN) only: texts, dates and tags raise
                columns[name] = np.array(values, dtype=np.float64)
    return ("ok", columns, metadata)


def main() -> None:
    source, target = sys.stdin.buffer, sys.stdout.buffer
    raw = b""
    while True:
        payload = read_frame(source)
        if payload is None:
            return
        request = pickle.loads(payload)  # from the parent process, which started this one
        if request[0] == "open":
            raw = request[1]
            write_frame(target, ("ok",))
        else:
            try:
                reply = call(raw, request[1], request[2])
            except MemoryError:
                reply = ("error", "MemoryError", "out of memory")
            write_frame(target, reply)


if __name__ == "__main__":
    main()
