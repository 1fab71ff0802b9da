"""Postcodes and geography: postcode parsing and levels, census population tables, threshold strategies, and the
polygons and adjacency of postcode units."""

from typing import TYPE_CHECKING

from privdash._lazy import lazy_names

if TYPE_CHECKING:
    from privdash.constants import DEFAULT_POPULATION_THRESHOLD
    from privdash.geo.geography import district_neighbours
    from privdash.geo.geomask import (
        SpatialK,
        coordinate_perturbation,
        donut_masking,
        masking_points,
        spatial_k_anonymity,
    )
    from privdash.geo.postcodes.parse import parse_postcodes
    from privdash.geo.postcodes.population import PopulationTable, population_counts, read_population
    from privdash.geo.postcodes.recode import recode_postcodes
    from privdash.geo.postcodes.strategies import (
        Neighbours,
        PostcodeGeneralization,
        Strategy,
        generalize_postcodes,
        neighbours_from_doogal,
    )

# Where each public name lives; its module is imported on first use (PEP 562).
_SOURCES: dict[str, str] = {
    "DEFAULT_POPULATION_THRESHOLD": "privdash.constants",
    "district_neighbours": "privdash.geo.geography",
    "donut_masking": "privdash.geo.geomask",
    "generalize_postcodes": "privdash.geo.postcodes.strategies",
    "masking_points": "privdash.geo.geomask",
    "Neighbours": "privdash.geo.postcodes.strategies",
    "neighbours_from_doogal": "privdash.geo.postcodes.strategies",
    "parse_postcodes": "privdash.geo.postcodes.parse",
    "coordinate_perturbation": "privdash.geo.geomask",
    "population_counts": "privdash.geo.postcodes.population",
    "PopulationTable": "privdash.geo.postcodes.population",
    "PostcodeGeneralization": "privdash.geo.postcodes.strategies",
    "read_population": "privdash.geo.postcodes.population",
    "recode_postcodes": "privdash.geo.postcodes.recode",
    "spatial_k_anonymity": "privdash.geo.geomask",
    "SpatialK": "privdash.geo.geomask",
    "Strategy": "privdash.geo.postcodes.strategies",
}
#: Old names, kept for one release: they resolve (a call warns) but are not listed in ``__all__``.
_SOURCES.update({"donut_mask": "privdash.geo.geomask", "perturb_coordinates": "privdash.geo.geomask"})

__all__ = [
    "DEFAULT_POPULATION_THRESHOLD",
    "Neighbours",
    "PopulationTable",
    "PostcodeGeneralization",
    "SpatialK",
    "Strategy",
    "coordinate_perturbation",
    "district_neighbours",
    "donut_masking",
    "generalize_postcodes",
    "masking_points",
    "neighbours_from_doogal",
    "parse_postcodes",
    "population_counts",
    "read_population",
    "recode_postcodes",
    "spatial_k_anonymity",
]

if not TYPE_CHECKING:  # mypy sees the names imported above; at run time they load on first use
    __getattr__, __dir__ = lazy_names(__name__, globals(), _SOURCES, __all__)
