"""The argument parsers of the ``privdash`` commands, one module a command (named as the command's module in
:mod:`privdash.commands`), each with ``register(subparsers)``.

These modules import only the standard library and light modules of the core (:mod:`privdash.constants`,
:mod:`privdash.dp.mechanisms`), never pandas or numpy: ``privdash <command> --help`` and a mistyped option are
answered before the command's own module, and the libraries it needs, are imported.
"""
