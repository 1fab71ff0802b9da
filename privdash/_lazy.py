"""Names of a package resolved on first use (PEP 562), so importing the package imports none of its modules."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(
    package: str, namespace: dict[str, Any], sources: Mapping[str, str], names: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: a name of ``sources`` is imported from its module on first
    use and kept in the package's ``namespace``; ``__dir__`` lists ``names`` (the package's ``__all__``) too."""
    listed = frozenset(names)

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | listed)

    return __getattr__, __dir__
