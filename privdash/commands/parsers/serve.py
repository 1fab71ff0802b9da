"""The parser of ``privdash serve``."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the dashboard in the browser (http://127.0.0.1:8050 by default)",
        description="Serve the privdash dashboard on Flask's development server. Its settings (upload store, "
        "caches, reference data, pseudonymisation key) come from the PRIVDASH_* environment variables. Not for the "
        "internet: give --workers to serve with gunicorn and the shipped production configuration instead.",
    )
    parser.add_argument("--host", help="address to listen on (default: HOST, else 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default: PORT, else 8050)")
    parser.add_argument("--debug", action="store_true", help="Dash debug mode (reloader, error pop-ups)")
    parser.add_argument(
        "--workers",
        type=int,
        help="serve with gunicorn and this many worker processes, configured for production "
        "(dashboard.gunicorn_conf) instead of the development server",
    )
