"""Subcommands of the ``privdash`` CLI, one per module (see :mod:`dashboard.cli`)."""
