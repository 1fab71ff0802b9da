"""docs/definitions.md matches the code name for name.

* Every name of its vocabulary table exists in the code: an API name is a public name, a parameter or field of a
  public function or class, a value of a public choice, or a string the code reads or writes (a JSON key, a step
  kind); a command-line option is an option of a command; an old spelling listed as "also accepted" is still read.
* Every option of every command (the parsers of :data:`privdash.cli.COMMANDS`), every command, every name of
  ``privdash.__all__`` and of each namespace's ``__all__`` appears on the page.
* The fix techniques of the vocabulary are the technique registry's names
  (:func:`privdash.transform.steps.registered_steps`).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import enum
import importlib
import inspect
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import privdash
from privdash.cli import COMMANDS, build_parser
from privdash.transform.steps import registered_steps

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "definitions.md"
NAMESPACES = (
    "privdash.data",
    "privdash.measure",
    "privdash.transform",
    "privdash.search",
    "privdash.utility",
    "privdash.geo",
    "privdash.attack",
    "privdash.dp",
    "privdash.engines",
    "privdash.synthesis",
)

#: Options that may be missing from the page, with the reason (none at the moment).
OPTION_EXCEPTIONS: dict[str, str] = {}


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def quoted(text: str) -> set[str]:
    """The ``code spans`` of ``text``."""
    return set(re.findall(r"`([^`]+)`", text))


def vocabulary() -> list[list[str]]:
    """The rows of the vocabulary table (concept, name, command line, also accepted)."""
    text = page()
    section = text[text.index("## Vocabulary") :]
    section = section[: section.index("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| concept |"), "the vocabulary table lost its header"
    cells = [[cell.strip() for cell in row.strip()[1:-1].split("|")] for row in rows[2:]]
    assert all(len(row) == 4 for row in cells), [row for row in cells if len(row) != 4]
    return cells


@cache
def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(None)
    (subparsers,) = (action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return dict(subparsers.choices)


@cache
def option_strings() -> dict[str, set[str]]:
    """Every option string of every command (help left out) -> the commands that have it."""
    found: dict[str, set[str]] = {}
    for name, parser in commands().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                found.setdefault(option, set()).add(name)
    return found


def public_names() -> dict[str, object]:
    names: dict[str, object] = {name: getattr(privdash, name) for name in privdash.__all__}
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        names.update({name: getattr(module, name) for name in module.__all__})
    return names


def _members(obj: object) -> Iterator[str]:
    """Parameter, field, attribute and choice names of a public object."""
    if isinstance(obj, enum.EnumMeta):
        for member in obj:  # type: ignore[var-annotated]
            yield member.name.lower()
            if isinstance(member.value, str):
                yield member.value
    if isinstance(obj, tuple | list | frozenset | set):
        yield from (item for item in obj if isinstance(item, str))
    if isinstance(obj, dict):
        yield from (key for key in obj if isinstance(key, str))
    if inspect.isclass(obj):
        if dataclasses.is_dataclass(obj):
            yield from (field.name for field in dataclasses.fields(obj))
        yield from (name for name in dir(obj) if not name.startswith("_"))
    if callable(obj):
        with contextlib.suppress(TypeError, ValueError):
            yield from inspect.signature(obj).parameters


@cache
def code_names() -> frozenset[str]:
    """Names the code defines or reads: public names and their members, the names of every module's ``__all__``
    and their members, and every identifier-like string literal of privdash (JSON keys, step kinds, choices)."""
    names: set[str] = set()
    objects = list(public_names().items())
    for path in sorted((ROOT / "privdash").rglob("*.py")):
        module_name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        names.add(module_name)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", node.value)
            ):
                names.add(node.value)
        if module_name == "privdash.transform.jobs":
            continue  # the deprecated alias module warns on import
        module = importlib.import_module(module_name)
        objects += [(name, getattr(module, name)) for name in getattr(module, "__all__", ()) if hasattr(module, name)]
    for name, obj in objects:
        names.add(name)
        names.update(_members(obj))
    return frozenset(names)


def resolves(dotted: str) -> bool:
    """Whether ``a.b.c`` names a module, or an attribute of one (``Diagnosis.check``: of a public name)."""
    parts = dotted.split(".")
    public = public_names()
    if parts[0] in public:
        obj: object = public[parts[0]]
        start = 1
    else:
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            start = cut
            break
        else:
            return False
    for part in parts[start:]:
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and part in {f.name for f in dataclasses.fields(obj)}:
            return part == parts[-1]  # a field without a class-level default
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def _api_token(token: str) -> str:
    """``Diagnosis.check(targets)`` -> ``Diagnosis.check``; ``k=`` -> ``k``."""
    return re.split(r"[(= ]", token, maxsplit=1)[0]


def _options(cell: str) -> list[str]:
    """The options a command-line cell names (``--targets k=5`` -> ``--targets``)."""
    return [token.split()[0].split("=")[0] for token in quoted(cell) if token.startswith("-")]


def test_every_api_name_of_the_vocabulary_exists_in_the_code() -> None:
    missing = []
    for concept, name_cell, _, _ in vocabulary():
        for token in quoted(name_cell):
            name = _api_token(token)
            if not (name in code_names() or ("." in name and resolves(name))):
                missing.append((concept, token))
    assert not missing, f"vocabulary names the code does not have: {missing}"


def test_every_option_of_the_vocabulary_is_an_option_of_a_command() -> None:
    unknown = [
        (concept, option)
        for concept, _, cli_cell, _ in vocabulary()
        for option in _options(cli_cell)
        if option not in option_strings()
    ]
    assert not unknown, f"the vocabulary names options no command has: {unknown}"


def test_every_old_spelling_listed_is_still_read() -> None:
    """An old option listed as also accepted is still an option of a command (read with a deprecation message); an
    old API name still exists."""
    gone = []
    for concept, _, _, accepted in vocabulary():
        for token in quoted(accepted):
            if token.startswith("-"):
                if token not in option_strings():
                    gone.append((concept, token))
            elif not (re.fullmatch(r"[\w.]+", token) is None or token in code_names() or resolves(token)):
                gone.append((concept, token))
    assert not gone, f"old spellings the page says are accepted but the code no longer reads: {gone}"


def test_old_option_spellings_warn_and_changed_meanings_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """The old spellings print a deprecation message naming the new option; diagnose's --l is refused (exit 2)."""
    parser = build_parser("diagnose")
    args = parser.parse_args(["diagnose", "t.csv", "--threshold", "0.1", "--query", "SELECT 1"])
    assert args.max_risk == 0.1 and args.sql == "SELECT 1"
    err = capsys.readouterr().err
    assert "--threshold is deprecated" in err and "use --max-risk" in err and "use --sql" in err
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["diagnose", "t.csv", "--l", "3"])
    assert stopped.value.code == 2 and "--recursive-l" in capsys.readouterr().err


def test_every_option_of_every_command_is_on_the_page() -> None:
    text = page()
    documented = quoted(text) | {option for span in quoted(text) for option in _options(f"`{span}`")}
    missing = {
        option: sorted(names)
        for option, names in option_strings().items()
        if option not in documented and option not in OPTION_EXCEPTIONS
    }
    assert not missing, f"options docs/definitions.md does not name: {missing}"


def test_every_command_is_on_the_page() -> None:
    text = page()
    assert set(COMMANDS) == set(commands())
    missing = [name for name in COMMANDS if f"`{name}`" not in text and f"`privdash {name}" not in text]
    assert not missing, f"commands docs/definitions.md does not name: {missing}"


def test_every_public_name_is_on_the_page() -> None:
    spans = quoted(page())
    documented = spans | {_api_token(span) for span in spans}
    missing = sorted(name for name in public_names() if name not in documented)
    assert not missing, f"public names docs/definitions.md does not name: {missing}"


def test_the_fix_techniques_are_the_registrys() -> None:
    (row,) = [row for row in vocabulary() if row[0].startswith("a fix technique")]
    listed = quoted(row[1])
    registered = set(registered_steps())
    unknown = listed - registered
    assert not unknown, f"techniques the registry does not have: {unknown}"
    unlisted = registered - listed
    assert not unlisted, f"registered techniques the vocabulary does not name: {unlisted}"


def test_one_rule_for_seeds() -> None:
    """docs/definitions.md, Randomness: a random choice is named seed; a published output's seed defaults to None
    (fresh, recorded), a measurement's to a fixed number; random_state and rng are only old names beside seed."""
    from privdash.dp.contributions import bound_contributions
    from privdash.transform.perturbation import invariant_pram_matrix

    names = public_names()
    published = [
        names[name]
        for name in ("add_noise", "rank_swap", "pram", "shuffling", "donut_masking", "coordinate_perturbation")
    ] + [bound_contributions, invariant_pram_matrix, *(names[name] for name in names if name.startswith("dp_"))]
    for function in published:
        assert inspect.signature(function).parameters["seed"].default is None, function  # type: ignore[arg-type]
    for function in (names["attack_release"], names["classifier_accuracy"], names["utility_report"]):
        assert inspect.signature(function).parameters["seed"].default == 0, function  # type: ignore[arg-type]
    for name, obj in names.items():
        if callable(obj) and not inspect.isclass(obj):
            parameters = inspect.signature(obj).parameters
            old = {"random_state", "rng"} & set(parameters)
            assert not old or "seed" in parameters, (name, old)
