"""Run the privdash dashboard.

Development: ``python app.py`` serves on http://127.0.0.1:8050 (``--host`` / ``--port``, or the ``HOST`` / ``PORT``
environment variables); ``privdash serve`` and ``python -m dashboard`` do the same from an installed package.
Production: ``gunicorn app:server`` (any number of workers; uploads and background jobs live on disk, see
``PRIVDASH_STORE_DIR`` and ``PRIVDASH_CACHE_DIR``). Every setting is read once, by
:meth:`privdash.application.settings.Settings.from_env`.
"""

from __future__ import annotations

import argparse

from dashboard.app import create_app
from privdash.application.settings import Settings

settings = Settings.from_env()
app = create_app(settings)
server = app.server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the privdash dashboard.")
    parser.add_argument("--host", default=settings.host, help="address to listen on (default: HOST, else 127.0.0.1)")
    parser.add_argument("--port", type=int, default=settings.port, help="port to listen on (default: PORT, else 8050)")
    parser.add_argument("--debug", action="store_true", help="Dash debug mode (reloader, error pop-ups)")
    args = parser.parse_args(argv)
    app.run(host=args.host, port=args.port, debug=args.debug)


if __name__ == "__main__":
    main()
