"""The browser dashboard: app factory, shell, component builders, server-side storage and URL state.

Nothing here computes a privacy number: every figure on screen comes from :mod:`privdash`; this package only
turns core results into components and user input into core calls.
"""
