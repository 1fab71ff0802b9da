"""``python -m dashboard [--host HOST] [--port PORT] [--debug]``: the same as ``privdash serve``."""

from __future__ import annotations

import sys

from privdash.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
