"""Deprecated: the batch job files are :mod:`privdash.transform.batch` (``jobs`` now means only the dashboard's
background jobs, :mod:`privdash.application.jobs`). The old names are read for one release, with a
:class:`DeprecationWarning`."""

from __future__ import annotations

import warnings
from typing import Any

#: Old name -> its name in :mod:`privdash.transform.batch`.
RENAMED = {
    "JobConfig": "BatchJob",
    "JobConfigError": "BatchJobError",
    "JobResult": "BatchJobResult",
    "parse_job": "parse_batch_job",
    "load_job": "load_batch_job",
    "run_job": "run_batch_job",
    "run_job_file": "run_batch_file",
}

warnings.warn(
    "privdash.transform.jobs is deprecated: import the batch job files from privdash.transform.batch",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    if name not in RENAMED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from privdash.transform import batch

    warnings.warn(
        f"privdash.transform.jobs.{name} is deprecated: use privdash.transform.batch.{RENAMED[name]}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(batch, RENAMED[name])
