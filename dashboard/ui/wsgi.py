"""The WSGI application of an installed privdash, for gunicorn: ``gunicorn -c python:dashboard.ui.gunicorn_conf
'dashboard.ui.wsgi:server' -w 4`` (the repository's ``app:server`` is the same app). Settings come from the
environment, read once (:meth:`~dashboard.application.settings.Settings.from_env`)."""

from __future__ import annotations

from dashboard.application.settings import Settings
from dashboard.ui.app import create_app

__all__ = ["app", "server"]

app = create_app(Settings.from_env())
server = app.server
