"""Postcodes as a quasi-identifier: parsing, census populations, and population-threshold generalization.

Postcodes re-identify people more often than any other quasi-identifier. The common publication rule is that a
published geographic unit must hold enough residents: at least 20,000 in the UK practice, and for US data the
HIPAA Safe Harbor rule (45 CFR 164.514(b)(2)(i)(B)), which keeps the first three digits of a ZIP code only when the
3-digit area holds *more than* 20,000 people and replaces it with ``000`` otherwise. This module answers "is our
postcode column safe at outward-code level, and if not, what is the finest level that is?".

UK postcode structure
---------------------
``EC1A 1BB`` is a *unit*; its *outward code* or *district* is ``EC1A``, its *area* the leading letters ``EC``, its
*sector* ``EC1A 1`` (district plus the inward digit). :func:`parse_postcodes` accepts any spacing and case, also
the fixed 7-character census form (``B1  1BA``, ``EC1A1BB``) and stray spaces inside (``B  1 1BA``): the inward code
is always the last three characters, so removing every space is unambiguous. A value that does not follow the
Royal Mail format is reported as invalid, never guessed (see :func:`parse_postcodes` for the exact rules).

Population reference
--------------------
:func:`read_population` reads the census unit-postcode table (``Postcode, Total, Males, Females,
Occupied_Households``, the 2011 Census "Headcounts and household estimates for postcodes" Table 1), tables already
summed per outward code (``postcode, population``; the doogal.co.uk district list), and US ZCTA populations, and
aggregates them to every coarser level (:meth:`PopulationTable.population`).

Strategies
----------
The mapping always starts from the *source level*: postcode districts (outward codes) in the UK, 3-digit ZIP codes
in the US (ZCTA populations summed by their first three digits). Each strategy maps every source code to a
published code:

``area``
    every district is published as its area.
``outward``
    every district is published as itself (the check "is the outward code safe?").
``mixed``
    districts under the threshold fall back to their area, the others stay. The published area code then stands
    for the *fallen-back districts only* (the districts published on their own are known not to contain the
    person), so its population is the sum over those districts.
``merge``
    ``mixed``, then every unit still under the threshold is merged with a neighbouring unit until every published
    unit passes (:func:`generalize_postcodes` documents the order and the neighbour rules).
``zip3``
    US Safe Harbor: a ZIP3 with the threshold *or fewer* people becomes ``000``.

UK strategies fail a unit when ``population < threshold`` ("must hold at least 20,000"); ``zip3`` fails it when
``population <= threshold`` (Safe Harbor: "more than 20,000" may stay). :func:`fails_threshold` is that rule.

Applying a mapping
------------------
:func:`recode_postcodes` (registered as the recipe step ``postcode_recode``) replaces a dataset's postcode column by
the published codes; :func:`population_counts` turns the census populations of the published units into the
population class sizes ``F_j`` used by journalist and marketer risk and k-map.

Modules: :mod:`~privdash.geo.postcodes.parse`, :mod:`~privdash.geo.postcodes.population`,
:mod:`~privdash.geo.postcodes.strategies` and :mod:`~privdash.geo.postcodes.recode`; this package gives their public
names.
"""

from privdash.geo.postcodes.parse import Country, normalize_postcode, parse_postcodes, parse_zip_codes, postcode_order
from privdash.geo.postcodes.population import (
    DEFAULT_DATA_DIR,
    PopulationTable,
    default_data_dir,
    population_counts,
    population_from_frame,
    read_population,
)
from privdash.geo.postcodes.recode import recode_postcodes
from privdash.geo.postcodes.strategies import (
    DEFAULT_POPULATION_THRESHOLD,
    SUPPRESSED_ZIP3,
    Neighbours,
    PostcodeGeneralization,
    Strategy,
    UnitMerge,
    fails_threshold,
    generalize_postcodes,
    neighbours_from_doogal,
    unit_populations,
)

__all__ = [
    "DEFAULT_DATA_DIR",
    "DEFAULT_POPULATION_THRESHOLD",
    "SUPPRESSED_ZIP3",
    "Country",
    "Neighbours",
    "PopulationTable",
    "PostcodeGeneralization",
    "Strategy",
    "UnitMerge",
    "default_data_dir",
    "fails_threshold",
    "generalize_postcodes",
    "neighbours_from_doogal",
    "normalize_postcode",
    "parse_postcodes",
    "parse_zip_codes",
    "population_counts",
    "population_from_frame",
    "postcode_order",
    "read_population",
    "recode_postcodes",
    "unit_populations",
]
