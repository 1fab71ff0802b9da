"""Run the privdash dashboard.

Development: ``python app.py`` serves on http://127.0.0.1:8050 (``--host`` / ``--port``, or the ``HOST`` / ``PORT``
environment variables). Production: ``gunicorn app:server`` (any number of workers; uploads and background jobs
live on disk, see ``PRIVDASH_STORE_DIR`` and ``PRIVDASH_CACHE_DIR``).
"""

from __future__ import annotations

import argparse
import os

from dashboard.ui.app import create_app

app = create_app()
server = app.server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the privdash dashboard.")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"), help="address to listen on")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8050")), help="port to listen on")
    parser.add_argument("--debug", action="store_true", help="Dash debug mode (reloader, error pop-ups)")
    args = parser.parse_args(argv)
    app.run(host=args.host, port=args.port, debug=args.debug)


if __name__ == "__main__":
    main()
