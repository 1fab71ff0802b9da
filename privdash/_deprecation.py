"""Old names of public functions, kept for one release: calling one warns (``DeprecationWarning``) and calls the new
function."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def deprecated_alias(function: F, old_name: str) -> F:
    """``function`` under its old name ``old_name``: a call warns that the name is now ``function.__name__``."""

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"{old_name}() is now {function.__name__}(): the old name goes in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return function(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    alias.__doc__ = f"Deprecated name of :func:`{function.__name__}` (one release)."
    return alias  # type: ignore[return-value]
