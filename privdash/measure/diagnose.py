"""The full disclosure-risk diagnosis of a table: classes, privacy models and re-identification risk in one call.

:func:`diagnose` is what the dashboard, the CLI (``privdash diagnose``) and Python users call. It groups the
records once (:mod:`.classes`) and evaluates every measure on that compact summary: k-anonymity and the class-size
table, the attribute-disclosure models of each sensitive attribute (:mod:`.models`), the prosecutor, journalist
and marketer risks (:mod:`.risk`) with the population information available (:mod:`.population`), and, when a
population size is known, the population-uniqueness estimates. The QI-combination analysis
(:mod:`.combinations`) is costlier and runs on request.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from privdash.engines.aggregate import COUNT, Engine, aggregate_table, resolve_engine
from privdash.errors import ColumnError, ParameterError, check_columns, check_fraction, check_positive_int
from privdash.measure.classes import (
    MISSING_LABEL,
    EquivalenceClasses,
    MissingPolicy,
    equivalence_classes,
    equivalence_classes_from_aggregate_rows,
)
from privdash.measure.entities import (
    EntityClasses,
    EntityKey,
    entity_classes,
    entity_classes_from_aggregate,
    entity_columns,
)
from privdash.measure.model_risk import ModelRisk, check_model_request
from privdash.measure.model_risk import model_risk as _model_risk
from privdash.measure.population import (
    PopulationCounts,
    PopulationSource,
    PopulationUniqueness,
    population_counts_from_sample,
    population_counts_from_size,
    population_counts_from_table,
    population_counts_from_weights,
    population_uniqueness,
)
from privdash.measure.risk import DEFAULT_MAX_RISK, IndividualRisk, RiskSummary, individual_risk, risk_summary
from privdash.measure.verdict import Verdict, check_targets
from privdash.targets import PrivacyTargets

if TYPE_CHECKING:  # loaded when a diagnosis asks for them (sensitive attributes, households, QI combinations)
    from privdash.data.contract import DataContract
    from privdash.measure.combinations import CombinationRisk
    from privdash.measure.household import HouseholdRisk
    from privdash.measure.models import SensitiveModels

__all__ = ["DEFAULT_K_VALUES", "Diagnosis", "diagnose"]

DEFAULT_K_VALUES: tuple[int, ...] = tuple(range(2, 11))


@dataclass(frozen=True, eq=False)
class Diagnosis:
    """Everything privdash knows about a table's disclosure risk, for one choice of roles and parameters.

    Attributes
    ----------
    rows
        Rows in the input table.
    quasi_identifiers, sensitive
        The columns analysed, in order.
    classes
        The equivalence classes (per-class sizes, QI values, sensitive distributions).
    risk
        Prosecutor, journalist and marketer risk at ``risk.max_risk``.
    population
        Where the population class sizes ``F_j`` came from.
    sensitive_models
        Per sensitive attribute, every attribute-disclosure model (dataset and per-class values).
    population_uniqueness
        Sample and estimated population uniques, when the population size is known (None otherwise, or under the
        ``wildcard`` policy with overlapping classes).
    individual_risk
        sdcMicro's individual risk, when sampling weights were given.
    combinations
        The QI-combination analysis, when requested.
    model_risk
        Per requested method, sdcMicro's model-based risk (``modRisk``) of the quasi-identifiers as keys.
    k_values
        The k for which ``records_below_k`` is reported.
    identifiers
        Columns the contract marks as direct identifiers (they must be removed or masked before release).
    engine, counting_seconds
        The engine that counted the classes (``pandas`` or ``duckdb``) and how long reading and counting took.
    warnings
        Plain sentences about roles that cannot do their job, e.g. a quasi-identifier missing in every record
        (it distinguishes no one, so k is as if it were not there).
    household_risk
        The household risk (:mod:`.household`), when a household column was given: from sdcMicro's individual risk
        with the sampling weights (``F`` = sum of the weights, whatever ``population`` says), ``1 / f`` without.
    household
        The household-id column, if any.
    entity, entity_key, entities, entity_rows_dropped, people
        With a person-id column (several rows per person, :mod:`privdash.measure.entities`): its name, the
        person key (``set`` or ``multiset``), the number of people in the input, the rows the ``drop`` policy left
        out, and the person-level classes with the class of each person (``people``). ``classes`` and every number
        derived from it are then counted in people (``n_records`` is the people in scope, ``classes.n_dropped`` the
        people all of whose rows were dropped); ``rows`` stays rows.
        None (0) without a person id.
    """

    rows: int
    quasi_identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    classes: EquivalenceClasses
    risk: RiskSummary
    population: PopulationCounts
    sensitive_models: Mapping[str, SensitiveModels] = field(default_factory=dict)
    population_uniqueness: PopulationUniqueness | None = None
    individual_risk: IndividualRisk | None = None
    combinations: CombinationRisk | None = None
    model_risk: Mapping[str, ModelRisk] = field(default_factory=dict)
    k_values: tuple[int, ...] = DEFAULT_K_VALUES
    identifiers: tuple[str, ...] = ()
    engine: str = "pandas"
    counting_seconds: float = 0.0
    warnings: tuple[str, ...] = ()
    household_risk: HouseholdRisk | None = None
    household: str | None = None
    entity: str | None = None
    entity_key: str | None = None
    entities: int | None = None
    entity_rows_dropped: int = 0
    people: EntityClasses | None = None

    @property
    def missing_policy(self) -> MissingPolicy:
        return self.classes.missing_policy

    @property
    def k(self) -> int:
        """The smallest class size: the table is k-anonymous for this k."""
        return self.classes.k

    @property
    def n_records(self) -> int:
        """Records in scope (rows minus those dropped by the ``drop`` policy)."""
        return self.classes.n_records

    @property
    def sample_uniques(self) -> int:
        return self.classes.sample_uniques

    def class_size_counts(self) -> dict[int, int]:
        """Class size -> number of classes of that size."""
        table = self.classes.size_frequencies()
        return dict(zip(table["size"].tolist(), table["classes"].tolist(), strict=True))

    def check(self, targets: PrivacyTargets) -> Verdict:
        """Whether the table meets ``targets``: pass/fail per target with reasons, and one sentence
        (:func:`privdash.measure.verdict.check_targets`)."""
        return check_targets(self, targets)

    def records_below_k(self) -> dict[int, int]:
        """k -> records in classes smaller than k (the records that violate k-anonymity), for ``k_values``."""
        # From the class-size table (one row per distinct size) rather than a pass over the classes for each k.
        table = self.classes.size_frequencies()
        sizes, records = table["size"].to_numpy(), table["records"].to_numpy()
        return {k: int(records[sizes < k].sum()) for k in self.k_values}

    def to_dict(self) -> dict[str, Any]:
        """The diagnosis as plain JSON-able values (infinite values stay ``inf``; the CLI writes them as null)."""
        n = self.n_records
        uniques = self.sample_uniques

        def attacker(model: Any) -> dict[str, Any]:
            return {
                "highest": model.highest,
                "average": model.average,
                "lowest": model.lowest,
                "records_at_risk": model.records_at_risk,
                "records_at_risk_count": model.n_records_at_risk,
                "max_risk": model.max_risk,
                "threshold": model.max_risk,  # the old JSON name of max_risk, kept for readers of the JSON
            }

        out: dict[str, Any] = {
            "engine": self.engine,
            "rows": self.rows,
            "records": n,
            "dropped": self.classes.n_dropped,
            "missing_policy": self.missing_policy.value,
            "quasi_identifiers": list(self.quasi_identifiers),
            "sensitive_attributes": list(self.sensitive),
            "direct_identifiers": list(self.identifiers),
            "classes": self.classes.n_classes,
            "k": self.k,
            "class_size_counts": {str(size): count for size, count in self.class_size_counts().items()},
            "records_below_k": {str(k): count for k, count in self.records_below_k().items()},
            "sample_uniques": uniques,
            "sample_uniqueness": uniques / n if n else 0.0,
            "max_risk": self.risk.max_risk,
            "threshold": self.risk.max_risk,  # the old JSON name of max_risk, kept for readers of the JSON
            "prosecutor": attacker(self.risk.prosecutor),
            "journalist": attacker(self.risk.journalist),
            "marketer": attacker(self.risk.marketer),
            "population": {
                "source": self.population.kind.value,
                "description": self.population.source,
                "population_size": self.population.population_size,
                "sampling_fraction": self.population.sampling_fraction,
            },
            "sensitive": {name: _sensitive_dict(models) for name, models in self.sensitive_models.items()},
            "warnings": list(self.warnings),
            "household": self.household,
            "household_risk": self.household_risk.to_dict() if self.household_risk is not None else None,
        }
        if self.entity is not None:  # counted in people: records, classes, k, risks above count people
            out["entity"] = self.entity
            out["entity_key"] = self.entity_key
            out["entities"] = self.entities
            out["dropped_rows"] = self.entity_rows_dropped
        if self.population_uniqueness is not None:
            uniqueness = self.population_uniqueness
            out["population_uniqueness"] = {
                "sampling_fraction": uniqueness.sampling_fraction,
                "population_size": uniqueness.population_size,
                "sample_uniques": uniqueness.sample_uniques,
                **{
                    estimate.name: {"uniques": estimate.uniques, "fraction": estimate.fraction, "valid": estimate.valid}
                    for estimate in _estimates(uniqueness)
                },
                "dankar_model": uniqueness.dankar.model.value,
            }
        if self.individual_risk is not None:
            individual = self.individual_risk
            out["individual_risk"] = {
                "expected_reidentifications": individual.expected_reidentifications,
                "global_risk": individual.global_risk,
                "highest": individual.highest,
            }
        if self.combinations is not None:
            table = self.combinations.table
            out["qi_combinations"] = [
                {
                    "quasi_identifiers": list(qis),
                    "distinction": float(distinction),
                    "separation": float(separation),
                    "k": int(k),
                    "sample_uniques": int(uniques),
                }
                for qis, distinction, separation, k, uniques in zip(
                    table["quasi_identifiers"],
                    table["distinction"],
                    table["separation"],
                    table["k"],
                    table["sample_uniques"],
                    strict=True,
                )
            ]
        if self.model_risk:
            out["model_risk"] = {method: result.to_dict() for method, result in self.model_risk.items()}
        return out


@dataclass(frozen=True)
class _Estimate:
    name: str
    uniques: float
    fraction: float
    valid: bool


def _estimates(uniqueness: PopulationUniqueness) -> list[_Estimate]:
    return [
        _Estimate(name, estimate.uniques, estimate.fraction, estimate.valid)
        for name, estimate in (
            ("pitman", uniqueness.pitman),
            ("zayatz", uniqueness.zayatz),
            ("snb", uniqueness.snb),
            ("dankar", uniqueness.dankar),
        )
    ]


def _sensitive_dict(models: SensitiveModels) -> dict[str, Any]:
    summary = models.summary()
    summary.pop("attribute", None)
    return summary


def diagnose(
    data: pd.DataFrame | str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    quasi_identifiers: Sequence[str] | None = None,
    *,
    sensitive: Sequence[str] | None = None,
    contract: DataContract | None = None,
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    population: int | float | pd.DataFrame | None = None,
    population_count: str | None = None,
    sampling_fraction: float | None = None,
    weights: str | None = None,
    household: str | None = None,
    entity: str | None = None,
    entity_key: str | EntityKey = EntityKey.SET,
    max_risk: float = DEFAULT_MAX_RISK,
    recursive_l: int = 2,
    hierarchies: Mapping[str, Any] | None = None,
    t_distance: str | None = None,
    k_values: Sequence[int] = DEFAULT_K_VALUES,
    combinations: bool = False,
    model_risk: Sequence[str] = (),
    model_interactions: Sequence[tuple[str, str]] = (),
    engine: str | Engine = Engine.AUTO,
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    spark_master: str | None = None,
) -> Diagnosis:
    """Diagnose the disclosure risk of ``data``.

    Parameters
    ----------
    data
        One row per person: a DataFrame, or a CSV / Parquet file, a glob or list of Parquet files (a dataset on
        disk). Never modified.
    quasi_identifiers
        Columns an attacker may know. Default: the contract's quasi-identifiers.
    sensitive
        Columns whose disclosure the attribute-disclosure models assess. Default: the contract's sensitive columns.
    contract
        Roles and types (ordinal orders, weight column, direct identifiers). Validated against ``data``.
    missing
        How missing QI values form classes: ``"value"`` (default), ``"wildcard"`` or ``"drop"`` (see
        :mod:`privdash.measure.classes`).
    population
        What is known of the population the table was sampled from: its size ``N`` (a number), or a population
        table with the same QI columns (one row per person, or ``population_count`` people per row).
    population_count
        Column of ``population`` holding the number of people per row.
    sampling_fraction
        ``pi = n / N``, instead of ``population`` as a number.
    weights
        Sampling-weight column (default: the contract's weight column). Used for the population counts when no
        ``population`` is given, and for sdcMicro's individual risk.
    household
        Household-id column (default: the contract's household column): the household risk of
        :mod:`privdash.measure.household`, with sampling weights when there are some, ``1 / f`` without. It
        cannot also be a quasi-identifier, sensitive or weight column.
    entity
        Person-id column, when a person may have several rows (default: the contract's ``is_entity_id`` column).
        Classes are then groups of people with equal keys, and every count is of people
        (:mod:`privdash.measure.entities`); a weight must be equal on all rows of a person. The ``wildcard``
        policy, a population table and the QI-combination analysis are refused with a person id.
    entity_key
        ``"set"`` (default): a person's key is the set of their distinct QI tuples; ``"multiset"``: each distinct
        tuple with its number of rows.
    max_risk
        Highest acceptable per-record re-identification risk ``tau``; records at risk have risk ``> tau``.
    recursive_l
        The l of recursive (c, l)-diversity (a measured model; the distinct-l *target* is
        :attr:`PrivacyTargets.l <privdash.targets.PrivacyTargets>`).
    hierarchies
        Per sensitive attribute, a generalization hierarchy for hierarchical t-closeness.
    t_distance
        Force the t-closeness ground distance (``equal``, ``ordered``, ``hierarchical``) for every attribute.
        Default: hierarchical with a hierarchy, ordered for numerical/ordinal/date attributes, else equal.
    k_values
        The k for which records in classes smaller than k are counted.
    combinations
        Also run the QI-combination analysis (distinction and separation of every QI subset).
    model_risk, model_interactions
        Methods of sdcMicro's model-based risk to compute (``default``, ``CE``, ``PML``, ``weightedLLM``,
        ``IPF``; :mod:`.model_risk`), with the quasi-identifiers as keys and these two-way interactions. From the
        classes' counts, weight sums and sums of ``1/w``; records with a missing QI are left out of the models.

    Notes
    -----
    Population counts ``F_j`` for the journalist and marketer models come from, in this order: a population
    table; a population size or sampling fraction (``F_j = f_j / pi``); sampling weights (``F_j`` = sum of
    weights); otherwise the sample itself (``F_j = f_j``, so journalist equals prosecutor, as ARX without a
    research subset).
    engine, memory_limit, temp_directory
        Where the classes are counted (:mod:`privdash.engines`): ``pandas`` in memory, ``duckdb`` out of
        core (files are streamed, only the per-class aggregate comes back; ``memory_limit`` such as ``"4GB"``,
        spilling to ``temp_directory``), or ``auto`` (a DataFrame stays in pandas; large files and Parquet globs
        go to DuckDB), ``spark`` (a Spark DataFrame, a :class:`SparkTable`, or files read by Spark on
        ``spark_master``, default the active session or ``local[*]``), or ``postgresql`` (a
        :class:`DatabaseSource` or a ``postgresql://`` URL: the GROUP BY runs in the database). Every engine gives
        the same numbers to the last digit.
    """
    in_memory = isinstance(data, pd.DataFrame) and resolve_engine(engine, data) == Engine.PANDAS
    if contract is not None and isinstance(data, pd.DataFrame):
        contract.validate(data)
    qis = (
        tuple(quasi_identifiers) if quasi_identifiers is not None else (contract.quasi_identifiers if contract else ())
    )
    if not qis:
        raise ColumnError("No quasi-identifier given: name them, or pass a contract that marks some as is_quasi_id.")
    sensitive_names = tuple(sensitive) if sensitive is not None else (contract.sensitive if contract else ())
    weight_column = weights if weights is not None else (contract.weight if contract else None)
    household_column = household if household is not None else (contract.household if contract else None)
    if household_column is not None:
        _check_household(household_column, qis, sensitive_names, weight_column)
    max_risk = check_fraction(max_risk, "max_risk")
    recursive_l = check_positive_int(recursive_l, "recursive_l")
    ks = tuple(check_positive_int(k, "k") for k in k_values)
    model_methods, model_pairs = check_model_request(model_risk, model_interactions, qis)
    orders = contract.ordinal_orders() if contract else {}
    ordered = _ordered_sensitive(contract, sensitive_names) if contract else None
    entity_column = entity if entity is not None else (contract.entity if contract else None)
    if entity_column is not None and household_column is not None:
        raise ParameterError(
            "A person id and a household id together are not supported: the household risk combines one record per "
            "person. Measure the household risk on a table with one row per person."
        )
    if entity_column is not None and model_methods:
        raise ParameterError(
            "Model-based risk fits the table of QI combinations of records; with a person id a class is a set of "
            "combinations per person, which the log-linear models do not describe. Leave out the model-based risk."
        )
    people: EntityClasses | None = None
    if entity_column is not None:
        people, rows, used, seconds = _people(
            data,
            in_memory,
            entity_column,
            entity_key,
            qis,
            sensitive_names,
            missing=missing,
            weights=weight_column,
            orders=orders,
            ordered=ordered,
            population=population,
            combinations=combinations,
            engine=engine,
            memory_limit=memory_limit,
            temp_directory=temp_directory,
            spark_master=spark_master,
        )
        classes = people.classes
    elif in_memory:
        assert isinstance(data, pd.DataFrame)
        check_columns(data, qis, role="quasi-identifier")
        check_columns(data, sensitive_names, role="sensitive attribute", allow_empty=True)
        if household_column is not None:
            check_columns(data, [household_column], role="household-id column")
        started = time.perf_counter()
        classes = equivalence_classes(
            data,
            qis,
            sensitive=sensitive_names,
            missing=missing,
            weights=weight_column,
            orders=orders,
            ordered=ordered,
        )
        rows, used, seconds = len(data), Engine.PANDAS, time.perf_counter() - started
    else:
        overlap = sorted(set(qis) & set(sensitive_names))
        if overlap:
            raise ColumnError(f"A column cannot be both quasi-identifier and sensitive: {', '.join(overlap)}.")
        columns = [
            *qis,
            *sensitive_names,
            *([weight_column] if weight_column else []),
            *([household_column] if household_column else []),
        ]
        aggregate = aggregate_table(
            data,
            columns,
            engine=engine,
            memory_limit=memory_limit,
            temp_directory=temp_directory,
            spark_master=spark_master,
        )
        classes, aggregate_class = equivalence_classes_from_aggregate_rows(
            aggregate.frame,
            qis,
            count=COUNT,
            sensitive=sensitive_names,
            missing=missing,
            orders=orders,
            ordered=ordered,
            weights=weight_column,
        )
        rows, used, seconds = aggregate.rows, aggregate.engine, aggregate.seconds
    counts = _population_counts(classes, population, population_count, sampling_fraction)
    risk = risk_summary(classes, counts, max_risk=max_risk)
    if sensitive_names:
        from privdash.measure.models import sensitive_models
    models = {
        name: sensitive_models(
            classes,
            name,
            recursive_l=recursive_l,
            hierarchy=(hierarchies or {}).get(name),
            t_distance=t_distance,
        )
        for name in sensitive_names
    }
    uniqueness = _uniqueness(classes, counts)
    individual = individual_risk(classes, counts) if classes.weight_sums is not None else None
    households = None
    if household_column is not None:
        from privdash.measure.household import household_risk_of_records

        # sdcMicro measure_risk(hid=): F from the sampling weights (survey risk), without them 1 / f (survey = FALSE)
        member_risk = individual_risk(classes)
        if in_memory:
            assert isinstance(data, pd.DataFrame) and classes.record_class is not None
            households = household_risk_of_records(member_risk, data[household_column], classes.record_class)
        else:
            households = household_risk_of_records(
                member_risk, aggregate.frame[household_column], aggregate_class, aggregate.frame[COUNT].to_numpy()
            )
    combination = None
    if combinations:
        from privdash.measure.combinations import combination_risk

        if in_memory:
            assert isinstance(data, pd.DataFrame)
            combination = combination_risk(data, qis, missing=classes.missing_policy)
        else:  # from the engine's aggregate: every subset's classes counted in records
            combination = combination_risk(aggregate.frame, qis, missing=classes.missing_policy, counts=COUNT)
    models_of_risk = {method: _model_risk(classes, method=method, interactions=model_pairs) for method in model_methods}
    return Diagnosis(
        rows=rows,
        quasi_identifiers=qis,
        sensitive=sensitive_names,
        classes=classes,
        risk=risk,
        population=counts,
        sensitive_models=models,
        population_uniqueness=uniqueness,
        individual_risk=individual,
        combinations=combination,
        model_risk=models_of_risk,
        k_values=ks,
        identifiers=contract.identifiers if contract else (),
        engine=used.value,
        counting_seconds=seconds,
        warnings=_warnings(data, classes, qis, sensitive_names, people),
        household_risk=households,
        household=household_column,
        entity=people.entity if people else None,
        entity_key=people.entity_key.value if people else None,
        entities=len(people.person_ids) if people else None,
        entity_rows_dropped=people.rows_dropped if people else 0,
        people=people,
    )


def _check_household(name: str, qis: Sequence[str], sensitive: Sequence[str], weights: str | None) -> None:
    """The household column has no other role: its ids single out no one by themselves, and a weight or QI column
    grouping records into households would measure something else."""
    for role, names in (
        ("quasi-identifier", qis),
        ("sensitive attribute", sensitive),
        ("weight column", [weights] if weights else []),
    ):
        if name in names:
            raise ColumnError(f"The household column '{name}' cannot also be a {role}.")


def _people(
    data: Any,
    in_memory: bool,
    entity: str,
    entity_key: str | EntityKey,
    qis: tuple[str, ...],
    sensitive: tuple[str, ...],
    *,
    missing: str | MissingPolicy,
    weights: str | None,
    orders: Mapping[str, Sequence[Any]],
    ordered: Sequence[str] | None,
    population: Any,
    combinations: bool,
    engine: str | Engine,
    memory_limit: str | None,
    temp_directory: str | os.PathLike[str] | None,
    spark_master: str | None,
) -> tuple[EntityClasses, int, Engine, float]:
    """The person-level classes of ``data`` (a person id given), with the rows read, the engine and the seconds."""
    if isinstance(population, pd.DataFrame):
        raise ParameterError(
            "A population table counts people per QI combination, but with a person id a class is a set of QI "
            "tuples per person: give the population size (population=N) or a sampling fraction instead."
        )
    if combinations:
        raise ParameterError("The QI-combination analysis counts rows; it is not available with a person id.")
    options: dict[str, Any] = {
        "entity_key": entity_key,
        "sensitive": sensitive,
        "missing": missing,
        "weights": weights,
        "orders": orders,
        "ordered": ordered,
    }
    columns = entity_columns(entity, qis, sensitive, weights)
    if in_memory:
        assert isinstance(data, pd.DataFrame)
        check_columns(data, columns, role="column")
        started = time.perf_counter()
        people = entity_classes(data, entity, qis, **options)
        return people, len(data), Engine.PANDAS, time.perf_counter() - started
    aggregate = aggregate_table(
        data,
        columns,
        engine=engine,
        memory_limit=memory_limit,
        temp_directory=temp_directory,
        spark_master=spark_master,
    )
    people = entity_classes_from_aggregate(aggregate.frame, entity, qis, count=COUNT, **options)
    return people, aggregate.rows, aggregate.engine, aggregate.seconds


def _warnings(
    data: Any,
    classes: EquivalenceClasses,
    qis: Sequence[str],
    sensitive: Sequence[str],
    people: EntityClasses | None = None,
) -> tuple[str, ...]:
    """Sentences naming the quasi-identifiers and sensitive attributes missing in every record (of a non-empty
    table): an empty QI distinguishes no one, an empty sensitive attribute discloses nothing, and both are more
    likely a wrong column or a reading problem than an intended role."""
    if isinstance(data, pd.DataFrame):
        if not len(data):
            return ()
        empty_qis = [name for name in qis if data[name].isna().all()]
        empty_sensitive = [name for name in sensitive if data[name].isna().all()]
    else:  # counted from an aggregate: the classes hold every value that occurs
        if not classes.n_records and not classes.n_dropped:
            return ()
        categories = people.qi_categories if people is not None else classes.categories
        empty_qis = [name for name, values in zip(qis, categories, strict=True) if not len(values)]
        empty_sensitive = [
            name for name, distribution in classes.sensitive.items() if list(distribution.labels) == [MISSING_LABEL]
        ]
    return tuple(
        [f"Quasi-identifier '{name}' is missing in every record: it does not distinguish anyone." for name in empty_qis]
        + [
            f"Sensitive attribute '{name}' is missing in every record: its disclosure measures describe no value."
            for name in empty_sensitive
        ]
    )


def _ordered_sensitive(contract: DataContract, names: Sequence[str]) -> list[str]:
    ordered = contract.ordered_columns()
    return [name for name in names if name in ordered]


def _population_counts(
    classes: EquivalenceClasses,
    population: int | float | pd.DataFrame | None,
    count: str | None,
    sampling_fraction: float | None,
) -> PopulationCounts:
    if isinstance(population, pd.DataFrame):
        if sampling_fraction is not None:
            raise ParameterError("Give a population table or a sampling fraction, not both.")
        return population_counts_from_table(classes, population, count=count)
    if population is not None or sampling_fraction is not None:
        if population is not None and (isinstance(population, bool) or not isinstance(population, int | float)):
            raise ParameterError(f"population must be a number of people or a table, got {type(population).__name__}.")
        return population_counts_from_size(
            classes,
            population_size=float(population) if population is not None else None,
            sampling_fraction=sampling_fraction,
        )
    if classes.weight_sums is not None:
        return population_counts_from_weights(classes)
    return population_counts_from_sample(classes)


def _uniqueness(classes: EquivalenceClasses, counts: PopulationCounts) -> PopulationUniqueness | None:
    """Population-uniqueness estimates when a population size is known and the classes partition the records."""
    if counts.kind == PopulationSource.SAMPLE or counts.population_size is None or not classes.n_records:
        return None
    if not np.array_equal(classes.sizes, classes.counts):
        return None
    return population_uniqueness(classes, population_size=counts.population_size)
