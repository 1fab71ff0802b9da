"""Imported by the fork server of background jobs only (:data:`dashboard.ui.jobs._PRELOAD`), never by a web worker:
loads the release report's renderers (matplotlib, WeasyPrint and the page's fonts) once in the fork server, so that
every Report job forked from it starts with them loaded instead of importing them itself (0.6 s of CPU a report).
"""

from __future__ import annotations

from privdash.application.report.render import load_renderers

#: Whether the renderers loaded (False: a Report job imports them itself and reports any failure).
LOADED = load_renderers()
