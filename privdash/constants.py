"""Defaults and option sets of the core, in a module that imports no heavy library.

The command line's parsers (:mod:`privdash.commands.parsers`) show these in ``--help`` and use them as defaults and
choices, so ``privdash <command> --help`` loads neither pandas nor numpy. The modules that use them import them from
here and re-export them under their old names (``privdash.engines.common.Engine``,
``privdash.targets.DEFAULT_MAX_SUPPRESSION``, ``privdash.utility.metrics.Metric`` ...), so each value is defined once.
"""

from __future__ import annotations

from privdash.choices import Choice

__all__ = [
    "AUTO_DUCKDB_BYTES",
    "AUTO_DUCKDB_CELLS",
    "AUTO_FIX_DUCKDB_BYTES",
    "AUTO_FIX_DUCKDB_CELLS",
    "DEFAULT_MAX_CHECKS",
    "DEFAULT_MAX_NODES",
    "DEFAULT_MAX_PEOPLE_NODES",
    "DEFAULT_MAX_SUPPRESSION",
    "DEFAULT_POPULATION_THRESHOLD",
    "FIX_TECHNIQUES",
    "MODEL_RISK_METHODS",
    "POSTCODE_STRATEGIES",
    "RECODING_CHOICES",
    "SEARCH_STRATEGIES",
    "SYNTHESIS_METHODS",
    "Engine",
    "Metric",
]

# --- targets and fixes ------------------------------------------------------------------------------------------

#: The suppression limit of every fix that searches, unless one is given: 5% of the records (the share ARX's examples
#: and the statistical offices' guidance commonly allow), the same on the Fix page, the command line, the API, the
#: presentations and the report.
DEFAULT_MAX_SUPPRESSION = 0.05

#: Largest lattice searched (the visiting order and pruning marks are kept for every node).
DEFAULT_MAX_NODES = 2_000_000
#: Nodes the heuristic search checks at most, unless told otherwise.
DEFAULT_MAX_CHECKS = 5_000
#: Largest lattice searched on people (each node groups the rows by person once).
DEFAULT_MAX_PEOPLE_NODES = 5_000

#: How the lattice is searched: ``exact`` (every node, with pruning; at most ``max_nodes``), ``heuristic``
#: (best-first with a budget of checks, :mod:`privdash.search.heuristic`), ``auto`` (exact up to
#: ``max_nodes``, heuristic beyond).
SEARCH_STRATEGIES = ("exact", "heuristic", "auto")

#: How a fix generalizes: ``global`` (one level per QI, :func:`~privdash.search.lattice.optimal_generalization`)
#: or ``local`` (levels per group of records, :func:`~privdash.search.local.local_recoding`).
RECODING_CHOICES = ("global", "local")

#: Other names of the information-loss metrics (ARX's and the literature's).
_METRIC_ALIASES = {
    "granularity": "loss",
    "generalization-intensity": "precision",
    "dm": "discernibility",
    "discernability": "discernibility",
    "average-class-size": "aecs",
    "non-uniform-entropy": "entropy",
    "nu-entropy": "entropy",
}


class Metric(Choice, label="metric", aliases=_METRIC_ALIASES):
    """Information-loss metrics (definitions in :mod:`privdash.utility.metrics`); lower is better for all five."""

    LOSS = "loss"
    PRECISION = "precision"
    DISCERNIBILITY = "discernibility"
    AECS = "aecs"
    ENTROPY = "entropy"


# --- measures ---------------------------------------------------------------------------------------------------

#: The methods of sdcMicro's ``modRisk``, in its order.
MODEL_RISK_METHODS: tuple[str, ...] = ("default", "CE", "PML", "weightedLLM", "IPF")

# --- engines ----------------------------------------------------------------------------------------------------


class Engine(Choice, label="engine"):
    """Where the aggregate is computed."""

    PANDAS = "pandas"
    DUCKDB = "duckdb"
    SPARK = "spark"
    POSTGRESQL = "postgresql"
    AUTO = "auto"


#: ``engine="auto"`` counts files larger than this (and every Parquet glob) with DuckDB: measured whole processes
#: (BENCHMARKS.md, "The engine auto chooses"), a CSV of 8 text columns costs pandas and DuckDB the same CPU at 11 MB
#: and pandas 1.2x the CPU and 1.6x the memory at 45 MB.
AUTO_DUCKDB_BYTES = 32 * 1024 * 1024
#: ... and Parquet files whose footer counts more cells (rows x columns) than this: Parquet compresses well (50M
#: rows of 8 dictionary-encoded columns in 121 MiB), so its size on disk says little about its size in memory.
AUTO_DUCKDB_CELLS = 4_000_000
#: ``privdash anonymize`` keeps a table in memory up to this size (its out-of-core path streams the fix to -o and
#: supports fewer options), and to this many Parquet cells.
AUTO_FIX_DUCKDB_BYTES = 256 * 1024 * 1024
AUTO_FIX_DUCKDB_CELLS = 100_000_000

# --- postcodes --------------------------------------------------------------------------------------------------

#: The least population of a published postcode unit (:mod:`privdash.geo.postcodes`, which takes it from here).
DEFAULT_POPULATION_THRESHOLD = 20_000
#: The values of :class:`privdash.geo.postcodes.Strategy`, in its order.
POSTCODE_STRATEGIES = ("area", "outward", "mixed", "merge", "zip3")

# --- fix techniques -------------------------------------------------------------------------------------------

#: The names of the fix techniques, in the Fix page's order (:data:`privdash.application.techniques.TECHNIQUES`,
#: which describes each; a test keeps the two equal): what ``privdash anonymize --step`` accepts.
FIX_TECHNIQUES = (
    "generalize",
    "top_bottom_coding",
    "record_suppression",
    "local_suppression",
    "microaggregation",
    "drop_identifiers",
    "mask_identifiers",
    "pseudonymize",
    "search",
    "add_noise",
    "rank_swap",
    "pram",
    "shuffling",
    "donut_masking",
    "coordinate_perturbation",
)

# --- synthetic data ------------------------------------------------------------------------------------------------

#: How :func:`privdash.synthesis.synthesize` makes a synthetic table: ``partial`` (only the chosen values of the
#: chosen records drawn from a model), ``full`` (every value drawn), ``hybrid`` (a share of the records replaced by
#: fully synthetic ones) and ``dp`` (MST, differentially private). Definitions: docs/synthesis.md.
SYNTHESIS_METHODS = ("partial", "full", "hybrid", "dp")
