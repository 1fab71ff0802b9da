"""privdash: privacy risk diagnostics for microdata."""

__version__ = "0.1.0"
