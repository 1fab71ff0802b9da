"""Measuring disclosure risk: integer encoding, equivalence classes, privacy models (k, l, t, delta, beta),
re-identification risk, population estimates, QI combinations and the one-call :func:`diagnose`."""
