"""``privdash serve``: run the dashboard on Flask's development server (``python -m dashboard`` does the same), or
with ``--workers N`` on gunicorn with the shipped production configuration.

Production is gunicorn with :mod:`dashboard.gunicorn_conf`, whose worker keeps answering while clients stall
mid-request: ``privdash serve --workers 4 --host 0.0.0.0``, ``gunicorn app:server -w 4`` from the repository, or
``gunicorn -c python:dashboard.gunicorn_conf dashboard.wsgi:server -w 4`` from an installed package. Uploads
and background jobs live on disk, so any number of workers share them.
"""

from __future__ import annotations

import argparse

from privdash.application.settings import Settings
from privdash.errors import ParameterError


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    # Imported here so that the other commands never load Dash.
    from dashboard.app import create_app

    host = args.host if args.host is not None else settings.host
    port = args.port if args.port is not None else settings.port
    if args.workers is not None:
        if args.workers < 1 or args.debug:
            raise ParameterError("--workers needs a number of at least 1, and no --debug (a production server).")
        from dashboard.server import run_production

        run_production(host, port, args.workers)
        return 0
    app = create_app(settings)
    app.run(host=host, port=port, debug=args.debug)
    return 0
