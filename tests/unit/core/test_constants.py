"""privdash/constants.py holds the defaults and option sets the CLI's parsers show; the modules that use them take
them from there (the same objects), and the copies of privdash.geo.postcodes's values agree with it."""

from __future__ import annotations

import importlib

from privdash import constants
from privdash.engines import aggregate, common
from privdash.geo import postcodes
from privdash.search import entities, heuristic, lattice, local
from privdash.targets import DEFAULT_MAX_SUPPRESSION
from privdash.utility import metrics


def test_the_modules_use_the_constants_themselves() -> None:
    assert common.Engine is aggregate.Engine is constants.Engine
    assert metrics.Metric is lattice.Metric is constants.Metric
    assert aggregate.AUTO_DUCKDB_BYTES == constants.AUTO_DUCKDB_BYTES == 32 * 2**20
    assert DEFAULT_MAX_SUPPRESSION is constants.DEFAULT_MAX_SUPPRESSION
    model_risk = importlib.import_module("privdash.measure.model_risk")  # the package's model_risk is a function
    assert model_risk.MODEL_RISK_METHODS is constants.MODEL_RISK_METHODS
    assert lattice.SEARCH_STRATEGIES is constants.SEARCH_STRATEGIES
    assert lattice.DEFAULT_MAX_NODES == constants.DEFAULT_MAX_NODES
    assert heuristic.DEFAULT_MAX_CHECKS == constants.DEFAULT_MAX_CHECKS
    assert local.RECODING_CHOICES is constants.RECODING_CHOICES
    assert entities.DEFAULT_MAX_PEOPLE_NODES == constants.DEFAULT_MAX_PEOPLE_NODES


def test_the_postcode_values_agree_with_the_postcode_module() -> None:
    assert constants.DEFAULT_POPULATION_THRESHOLD is postcodes.DEFAULT_POPULATION_THRESHOLD
    assert tuple(strategy.value for strategy in postcodes.Strategy) == constants.POSTCODE_STRATEGIES


def test_the_moved_choices_still_parse() -> None:
    assert constants.Metric.parse("DM") is constants.Metric.DISCERNIBILITY
    assert constants.Engine.parse(" DuckDB ") is constants.Engine.DUCKDB


def test_the_fix_techniques_the_cli_lists_are_the_described_ones() -> None:
    from privdash.application.techniques import TECHNIQUES

    assert tuple(TECHNIQUES) == constants.FIX_TECHNIQUES
