"""The layers of the two packages, checked from the source: what may import what, and no import circles.

    core         ``privdash`` outside the three below: pure computation, imports only the core
    application  ``privdash.application``, the rules above the core: core and application, no web framework
    commands     ``privdash.cli``, ``privdash.commands``: the CLI over core and application (``serve`` also builds
                 the Dash app of ``dashboard.ui``, which it runs)
    ui           ``dashboard.ui``: the Dash layer's components and server, never a page
    pages        ``dashboard.pages``: one module (or package of section modules) per page; a page never imports
                 another page

Only ``dashboard`` imports a web framework; ``privdash`` never imports ``dashboard`` (but for ``serve``).

Imports inside ``if TYPE_CHECKING:`` are ignored (they never run); imports inside functions count, so a circle
cannot hide behind a lazy import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (ROOT / "privdash", ROOT / "dashboard")
WEB = ("dash", "dash_ag_grid", "dash_mantine_components", "flask", "plotly", "werkzeug")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in package.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(path: Path, name: str) -> Iterator[str]:
    """Absolute names of the modules imported by one file (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            skip.update(id(child) for child in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            yield base
            for alias in node.names:  # "from privdash import geo" imports the module privdash.geo
                yield f"{base}.{alias.name}"


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        edges[name] = {target for target in imported(path, name) if target in known and target != name}
    return edges


def layer(name: str) -> str:
    parts = name.split(".")
    if parts[0] == "privdash":
        if len(parts) > 1 and parts[1] == "application":
            return "application"
        if len(parts) > 1 and parts[1] in ("cli", "commands", "__main__"):
            return "commands"
        return "core"
    if parts[0] == "dashboard" and len(parts) > 1 and parts[1] in ("ui", "pages", "core"):
        return {"core": "alias"}[parts[1]] if parts[1] == "core" else parts[1]
    return "app"  # dashboard's own package files


ALLOWED = {
    "core": {"core"},
    "application": {"core", "application"},
    "commands": {"core", "application", "commands"},
    "ui": {"core", "application", "ui"},
    "pages": {"core", "application", "ui", "pages"},
    "alias": {"core"},
    "app": {"core", "application", "commands", "ui", "pages", "app"},
}


def test_every_layer_imports_only_what_it_may() -> None:
    also = {"privdash.commands.serve": {"app"}}
    problems = []
    known = modules()
    assert {layer(name) for name in known} == set(ALLOWED)
    for name, path in known.items():
        own = layer(name)
        for target in imported(path, name):
            root = target.split(".")[0]
            if root in WEB and root != "dashboard" and name.startswith("privdash"):
                problems.append(f"{name} imports {target}")
            if root not in ("privdash", "dashboard"):
                continue
            permitted = ALLOWED[own] | also.get(name, set())
            if target in ("privdash", "dashboard"):
                continue  # a package's lazy top level
            if layer(target) not in permitted:
                problems.append(f"{name} ({own}) imports {target} ({layer(target)})")
    assert problems == []


def page_of(name: str) -> str | None:
    """The page a module belongs to: ``dashboard.pages.<page>`` (a page may be a package of section modules)."""
    parts = name.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["dashboard", "pages"] and len(parts) > 2 else None


def test_no_page_imports_another_page() -> None:
    problems = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        if page_of(name) is not None
        for target in targets
        if page_of(target) not in (None, page_of(name))
    ]
    assert problems == []
    # The Fix page is one page: its sections are modules of its package.
    assert page_of("dashboard.pages.fix.protect") == page_of("dashboard.pages.fix") == "dashboard.pages.fix"
    assert page_of("dashboard.pages.risk") != page_of("dashboard.pages.fix")


def test_no_import_circle() -> None:
    edges = graph()
    # A package's __init__ re-exporting its submodules is not a circle of logic: leave those edges out.
    edges = {name: {t for t in targets if not t.startswith(name + ".")} for name, targets in edges.items()}
    seen: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        seen[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if seen.get(target) == 1:
                circles.append([*stack[stack.index(target) :], target])
            elif target not in seen:
                visit(target)
        stack.pop()
        seen[node] = 2

    for node in sorted(edges):
        if node not in seen:
            visit(node)
    assert circles == []


@pytest.mark.parametrize("layer_name", ["core", "application"])
def test_no_environment_reads_in_the_core_or_application(layer_name: str) -> None:
    reads = []
    for name, path in modules().items():
        if layer(name) != layer_name or (path.name == "settings.py" and layer_name == "application"):
            continue  # settings.py: the one place the settings are read
        text = path.read_text(encoding="utf-8")
        if "os.environ" in text or "getenv(" in text:
            reads.append(name)
    assert reads == []
