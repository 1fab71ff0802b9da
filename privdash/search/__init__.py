"""Searching the generalization lattice for the least-lossy transformation that meets the privacy targets."""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.search.entities import DEFAULT_MAX_PEOPLE_NODES, PeopleSearchResult, people_generalization
    from privdash.search.heuristic import DEFAULT_MAX_CHECKS, heuristic_search
    from privdash.search.lattice import (
        DEFAULT_MAX_NODES,
        SEARCH_STRATEGIES,
        SearchResult,
        Solution,
        optimal_generalization,
    )
    from privdash.search.local import RECODING_CHOICES, LocalRecodingResult, anonymize, local_recoding
    from privdash.search.solutions import SolutionEstimates, solution_estimates, solution_table

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "anonymize": "privdash.search.local",
    "DEFAULT_MAX_CHECKS": "privdash.search.heuristic",
    "DEFAULT_MAX_NODES": "privdash.search.lattice",
    "DEFAULT_MAX_PEOPLE_NODES": "privdash.search.entities",
    "heuristic_search": "privdash.search.heuristic",
    "local_recoding": "privdash.search.local",
    "LocalRecodingResult": "privdash.search.local",
    "optimal_generalization": "privdash.search.lattice",
    "people_generalization": "privdash.search.entities",
    "PeopleSearchResult": "privdash.search.entities",
    "RECODING_CHOICES": "privdash.search.local",
    "SEARCH_STRATEGIES": "privdash.search.lattice",
    "SearchResult": "privdash.search.lattice",
    "Solution": "privdash.search.lattice",
    "solution_estimates": "privdash.search.solutions",
    "solution_table": "privdash.search.solutions",
    "SolutionEstimates": "privdash.search.solutions",
}

__all__ = [
    "DEFAULT_MAX_CHECKS",
    "DEFAULT_MAX_NODES",
    "DEFAULT_MAX_PEOPLE_NODES",
    "RECODING_CHOICES",
    "SEARCH_STRATEGIES",
    "LocalRecodingResult",
    "PeopleSearchResult",
    "SearchResult",
    "Solution",
    "SolutionEstimates",
    "anonymize",
    "heuristic_search",
    "local_recoding",
    "optimal_generalization",
    "people_generalization",
    "solution_estimates",
    "solution_table",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
