"""The privdash web app (Dash): pages, components and the server. The library is :mod:`privdash`."""

from privdash import __version__

__all__ = ["__version__"]
