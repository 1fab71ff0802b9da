"""One module per dashboard page. Each defines ``PATH``, ``NAME``, ``layout(services, **query)`` and
``register(app, services)``, which registers the page with Dash and adds its callbacks to ``app``."""

from . import data, fix, postcodes, present, risk

#: The pages in navigation order.
PAGES = (data, risk, fix, postcodes, present)

__all__ = ["PAGES"]
