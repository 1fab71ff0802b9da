"""Subcommands of the ``privdash`` CLI, one per module (see :mod:`privdash.cli`)."""
