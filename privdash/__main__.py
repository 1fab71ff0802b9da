"""``python -m privdash ...``: the same as the ``privdash`` command."""

from __future__ import annotations

import sys

from privdash.cli import main

if __name__ == "__main__":
    sys.exit(main())
