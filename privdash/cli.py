"""The ``privdash`` command line: one subcommand per module of :mod:`privdash.commands`.

Each command has two modules: its parser, ``register(subparsers)`` in :mod:`privdash.commands.parsers`, and what it
runs, ``run(args)`` in :mod:`privdash.commands` (a function of the parsed arguments returning an exit status). A
command that needs settings (the shared-data folder, the pseudonymisation key, the server address) reads them once
with :meth:`~privdash.application.settings.Settings.from_env` and passes the values down. Errors caused by the input
(:class:`PrivdashError`) print one clear message on stderr and exit with status 2; they never print a traceback.

Start-up: the commands and their one-line help come from the static table :data:`COMMANDS`; only the parser of the
command named is built, and the parsers import no pandas or numpy (their defaults and choices come from
:mod:`privdash.constants`). The command's own module, with the libraries it needs, is imported once the arguments
parse. So ``privdash --version`` and ``privdash <command> --help`` take a fraction of a bare ``import pandas``.
tests/unit/test_cli_commands.py checks that the table matches the command modules; tests/integration/cli/
test_startup.py times the start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Iterator, Sequence

from . import __version__

EXIT_USAGE = 2

#: Each command: its module in :mod:`privdash.commands` (and :mod:`privdash.commands.parsers`) and the help line
#: ``privdash --help`` lists (the same text as the parser's ``register`` gives), in the order of the listing.
COMMANDS: dict[str, tuple[str, str]] = {
    "anonymize": (
        "anonymize",
        "generalize quasi-identifiers (optimal levels + record suppression) or re-apply a recipe",
    ),
    "attack": ("attack", "measure linkage, singling-out and inference attacks on a released table"),
    "demo-data": ("demo_data", "generate a demo table"),
    "diagnose": ("diagnose", "equivalence classes, privacy models and re-identification risk of a table"),
    "postcodes": ("postcodes", "publishable postcode units by census population (UK districts/areas, US ZIP3)"),
    "project": ("project", "save, show or check a project file (contract, targets, steps, sign-off, fingerprint)"),
    "release": ("release", "differentially private counts, histograms, class-size tables, sums and means (OpenDP)"),
    "report": ("report", "the release report of a table (HTML or PDF), optionally after a fix"),
    "serve": ("serve", "run the dashboard in the browser (http://127.0.0.1:8050 by default)"),
    "synthesize": (
        "synthesize",
        "partially, fully, hybrid or DP synthetic tables, judged by the attacks against held-out control records",
    ),
}


def _command_in(argv: Sequence[str]) -> str | None:
    """The command named on the command line: the first argument that is not an option (the top-level parser has
    only ``--help`` and ``--version``, which take no value)."""
    return next((argument for argument in argv if not argument.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``privdash`` parser. ``command`` (a name of :data:`COMMANDS`) gets its full parser from its parser module;
    the others are listed with their help line only; ``command=None`` gives every command its full parser."""
    parser = argparse.ArgumentParser(
        prog="privdash",
        description="Privacy risk diagnostics for microdata: which records can be re-identified, why, "
        "and what is the cheapest fix.",
    )
    parser.add_argument("--version", action="version", version=f"privdash {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(f"privdash.commands.parsers.{module_name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text)
    return parser


#: The exit status of a command whose reader closed the pipe (128 + SIGPIPE, as a shell reports it).
EXIT_BROKEN_PIPE = 141


def _reuse_freed_memory() -> None:
    """Let the C allocator (glibc's) keep freed memory for the next large array instead of returning it to the
    system: a command's columns and their temporaries (8 MB for a million floats) are otherwise each mapped afresh,
    and the system's work of zeroing those pages cost 0.3-0.5 s of a 2.5 s diagnosis of a million-row CSV. A
    process-wide setting, made by the command line (a program that imports the library keeps its own)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    trim_threshold, top_pad, mmap_threshold = -1, -2, -3  # malloc.h's M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD
    mallopt(mmap_threshold, 32 << 20)  # blocks under 32 MiB (4M floats) come from the heap
    mallopt(trim_threshold, 1 << 30)
    mallopt(top_pad, 256 << 20)


def _arrow_from_the_c_allocator() -> None:
    """Have Arrow allocate its buffers with the C allocator (glibc's, which :func:`_reuse_freed_memory` has keep
    what is freed) instead of its own pool (mimalloc), which hands freed pages back to the system and faults them in
    again: 0.1 s of system time and 70 MiB of peak memory on a diagnosis of a million-row CSV (its aggregate's text,
    the typing's Arrow temporaries). :func:`pyarrow.set_memory_pool`, no environment variable; Linux only, as
    :func:`_reuse_freed_memory`. A process-wide setting, made only when :func:`main` runs the command line of its
    own process (see :func:`_collector_spared`)."""
    if not sys.platform.startswith("linux"):
        return
    import pyarrow as pa  # imported by every command anyway (pandas imports it)

    pa.set_memory_pool(pa.system_memory_pool())


def _stop_idle_blas_threads() -> None:
    """Import numpy without the threads of its BLAS (OpenBLAS) spinning. OpenBLAS starts a thread a core when it
    loads, and each spins, busy, for about 0.1 s before it sleeps: 0.1 s of CPU a command for nothing, as a command
    line's work uses no BLAS routine (privdash sums with numpy's own pairwise sums). numpy's wheels carry OpenBLAS
    beside the package (``numpy.libs``): it is loaded first and its threads stopped at once, before numpy's import
    (which then finds it loaded); any other OpenBLAS the process has loaded once numpy is imported is stopped then.
    ``blas_thread_shutdown_`` is what OpenBLAS calls itself before a fork, and it starts its threads again if a BLAS
    routine runs. Linux only; nothing is done for a library that is not there or lacks the function. A
    process-wide setting, made only when :func:`main` runs the command line of its own process."""
    if not sys.platform.startswith("linux"):
        return
    for library in _openblas_beside_numpy():
        _shutdown_blas_threads(library)
    import numpy  # noqa: F401  (loads OpenBLAS, unless loaded above)

    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            libraries = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return
    for library in sorted(libraries):
        _shutdown_blas_threads(library)


def _openblas_beside_numpy() -> list[str]:
    """The OpenBLAS libraries of numpy's wheel (``numpy.libs`` beside the package), found without importing numpy."""
    import glob
    import importlib.util

    try:
        spec = importlib.util.find_spec("numpy")
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    return sorted(glob.glob(os.path.join(glob.escape(os.path.dirname(spec.origin) + ".libs"), "*openblas*.so*")))


def _shutdown_blas_threads(library: str) -> None:
    import ctypes

    try:
        shutdown = ctypes.CDLL(library).blas_thread_shutdown_
    except (OSError, AttributeError):
        return
    shutdown()


@contextlib.contextmanager
def _collector_spared() -> Iterator[None]:
    """Import a command's modules without the cyclic garbage collector, then leave what they made to it no more.

    Importing pandas, pyarrow and the command's modules makes hundreds of thousands of objects (classes, functions,
    their dictionaries) that live until the process ends and are never garbage; the collector runs over them again
    and again while they are made (0.02-0.03 s of a command) and once more, with every module, when the interpreter
    ends (0.06 s). Collection is off during the import, and :func:`gc.freeze` then moves these objects to the
    collector's permanent generation: what the command itself makes is collected as usual. A process-wide setting
    (objects frozen are not collected even when they become garbage), made only when :func:`main` runs the command
    line of its own process, not when a program or a test calls it with arguments of its own."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    own_process = argv is None or arguments == sys.argv[1:]  # the command line of this process
    command = _command_in(arguments)
    parser = build_parser(command if command in COMMANDS else "")
    args = parser.parse_args(arguments)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from privdash.errors import PrivdashError

    if args.command != "serve":  # a long-lived server returns what it frees; a command ends soon
        _reuse_freed_memory()
    # The process-wide settings of a command that ends soon, made only for the command line of this process (not
    # when a program or a test calls main with arguments of its own); a long-lived server keeps the defaults.
    tuned = own_process and args.command != "serve"
    try:
        with _collector_spared() if tuned else contextlib.nullcontext():
            if tuned:
                _stop_idle_blas_threads()
                _arrow_from_the_c_allocator()
            run = importlib.import_module(f"privdash.commands.{COMMANDS[args.command][0]}").run
        status = int(run(args) or 0)
        sys.stdout.flush()  # here, where a reader that went away is caught, not at the interpreter's exit
        return status
    except PrivdashError as exc:
        print(f"privdash {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"privdash {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of the output went away (``privdash diagnose ... | head``): stop quietly as Unix tools do, and
        # point standard output at nothing so that the interpreter's own flush at exit does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
