"""The WSGI application of an installed privdash, for gunicorn: ``gunicorn -c python:dashboard.gunicorn_conf
'dashboard.wsgi:server' -w 4`` (the repository's ``app:server`` is the same app). Settings come from the
environment, read once (:meth:`~privdash.application.settings.Settings.from_env`)."""

from __future__ import annotations

from dashboard.app import create_app
from privdash.application.settings import Settings

__all__ = ["app", "server"]

app = create_app(Settings.from_env())
server = app.server
