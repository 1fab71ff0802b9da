"""Column roles and statistical types, and the JSON data contract that records them.

A *data contract* says, for each column, which role it plays in a disclosure analysis and how its values are
ordered. The JSON form is::

    {"field_metadata": [
        {"field_name": "size",
         "personal_data_config": {"is_quasi_id": true},
         "statistical_data_type": "ORDINAL",
         "ordinal_values": ["XS", "S", "M", "L", "XL"]},
        {"field_name": "email", "personal_data_config": {"is_direct_id": true},
         "statistical_data_type": "NOMINAL"},
        {"field_name": "diagnosis", "personal_data_config": {"is_sensitive": true},
         "statistical_data_type": "NOMINAL"},
        {"field_name": "weight", "personal_data_config": {"is_weight": true},
         "statistical_data_type": "NUMERICAL"},
        {"field_name": "hid", "personal_data_config": {"is_household_id": true},
         "statistical_data_type": "NOMINAL"}
    ]}

``personal_data_config`` holds at most one true flag among ``is_direct_id``, ``is_quasi_id``,
``is_sensitive``, ``is_weight``, ``is_household_id`` (the household each person belongs to: members of one
household can be linked through it, so a record's risk is its household's) and ``is_entity_id`` (the person a row
belongs to, when one person has several rows: risk is then counted in people); with none the column is
*insensitive*. ``statistical_data_type`` is one of
``NUMERICAL``, ``NOMINAL``, ``ORDINAL`` (then ``ordinal_values`` lists every value, lowest first), ``DATE``,
``POSTCODE`` or ``COORDINATE`` (latitude or longitude in decimal degrees, inferred for numeric columns named like
one whose values are all in range). Unknown keys are kept on load and written back on save, so contracts made by
other tools survive a round trip.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdash.choices import Choice
from privdash.errors import ContractError, format_values

__all__ = [
    "ColumnRole",
    "DataContract",
    "FieldMetadata",
    "StatisticalType",
    "suggest_contract",
]


class ColumnRole(Choice, label="column role"):
    """The part a column plays in a disclosure analysis."""

    IDENTIFIER = "identifier"
    QUASI_IDENTIFIER = "quasi_identifier"
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"
    WEIGHT = "weight"
    HOUSEHOLD = "household"
    ENTITY = "entity"


class StatisticalType(Choice, label="statistical type"):
    """How a column's values compare: by number, by name only, by a declared order, by date, as postcodes."""

    NUMERICAL = "NUMERICAL"
    NOMINAL = "NOMINAL"
    ORDINAL = "ORDINAL"
    DATE = "DATE"
    POSTCODE = "POSTCODE"
    COORDINATE = "COORDINATE"


_ROLE_FLAGS = {
    "is_direct_id": ColumnRole.IDENTIFIER,
    "is_quasi_id": ColumnRole.QUASI_IDENTIFIER,
    "is_sensitive": ColumnRole.SENSITIVE,
    "is_weight": ColumnRole.WEIGHT,
    "is_household_id": ColumnRole.HOUSEHOLD,
    "is_entity_id": ColumnRole.ENTITY,
}
_FLAG_OF_ROLE = {role: flag for flag, role in _ROLE_FLAGS.items()}


@dataclass(frozen=True)
class FieldMetadata:
    """Role and type of one column; ``ordinal_values`` lists the order for ``ORDINAL`` columns."""

    name: str
    role: ColumnRole = ColumnRole.INSENSITIVE
    statistical_type: StatisticalType = StatisticalType.NOMINAL
    ordinal_values: tuple[Any, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.statistical_type == StatisticalType.ORDINAL:
            if not self.ordinal_values:
                raise ContractError(f"Column '{self.name}' is ORDINAL but has no ordinal_values.")
            if len(set(self.ordinal_values)) != len(self.ordinal_values):
                raise ContractError(f"Column '{self.name}': ordinal_values contains repeated values.")
        elif self.ordinal_values is not None:
            object.__setattr__(self, "ordinal_values", None)

    @property
    def is_ordered(self) -> bool:
        """True for types whose values have a natural or declared order (numerical, ordinal, date)."""
        return self.statistical_type in (
            StatisticalType.NUMERICAL,
            StatisticalType.ORDINAL,
            StatisticalType.DATE,
            StatisticalType.COORDINATE,
        )

    def to_dict(self) -> dict[str, Any]:
        """The field's JSON object in the contract format."""
        config = {_FLAG_OF_ROLE[self.role]: True} if self.role in _FLAG_OF_ROLE else {}
        out: dict[str, Any] = dict(self.extra)
        out.update(
            {
                "field_name": self.name,
                "personal_data_config": config,
                "statistical_data_type": self.statistical_type.value,
            }
        )
        if self.ordinal_values is not None:
            out["ordinal_values"] = [_jsonable(v) for v in self.ordinal_values]
        return out

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> FieldMetadata:
        """Parse one entry of ``field_metadata``."""
        if not isinstance(obj, Mapping):
            raise ContractError(f"Each entry of field_metadata must be an object, got {type(obj).__name__}.")
        name = obj.get("field_name")
        if not isinstance(name, str) or not name:
            raise ContractError("Each entry of field_metadata needs a non-empty 'field_name'.")
        config = obj.get("personal_data_config") or {}
        if not isinstance(config, Mapping):
            raise ContractError(f"Column '{name}': personal_data_config must be an object.")
        unknown_flags = [key for key in config if key not in _ROLE_FLAGS and key != "is_insensitive"]
        if unknown_flags:
            raise ContractError(
                f"Column '{name}': unknown personal_data_config keys {format_values(unknown_flags)}; "
                f"use {', '.join(_ROLE_FLAGS)}."
            )
        roles = [role for flag, role in _ROLE_FLAGS.items() if config.get(flag) is True]
        if len(roles) > 1:
            raise ContractError(f"Column '{name}' has more than one role: {', '.join(r.value for r in roles)}.")
        raw_type = obj.get("statistical_data_type", "NOMINAL")
        try:
            statistical_type = StatisticalType(str(raw_type).upper())
        except ValueError:
            allowed = ", ".join(t.value for t in StatisticalType)
            raise ContractError(
                f"Column '{name}': unknown statistical_data_type {raw_type!r}; use {allowed}."
            ) from None
        ordinal = obj.get("ordinal_values")
        if ordinal is not None and not isinstance(ordinal, list):
            raise ContractError(f"Column '{name}': ordinal_values must be a list.")
        known = {"field_name", "personal_data_config", "statistical_data_type", "ordinal_values"}
        return cls(
            name=name,
            role=roles[0] if roles else ColumnRole.INSENSITIVE,
            statistical_type=statistical_type,
            ordinal_values=tuple(ordinal) if ordinal is not None else None,
            extra={k: v for k, v in obj.items() if k not in known},
        )


class ColumnsByRole:
    """Columns by role, for anything that lists ``(column, role)`` pairs in column order (the data contract, the
    dashboard's view state): one definition of what a quasi-identifier list or a sensitive list is."""

    def role_items(self) -> Iterable[tuple[str, ColumnRole]]:
        raise NotImplementedError

    def with_role(self, role: ColumnRole) -> tuple[str, ...]:
        """Names of the columns that have ``role``, in column order."""
        return tuple(name for name, value in self.role_items() if value == role)

    @property
    def quasi_identifiers(self) -> tuple[str, ...]:
        return self.with_role(ColumnRole.QUASI_IDENTIFIER)

    @property
    def sensitive(self) -> tuple[str, ...]:
        return self.with_role(ColumnRole.SENSITIVE)

    @property
    def identifiers(self) -> tuple[str, ...]:
        return self.with_role(ColumnRole.IDENTIFIER)


@dataclass(frozen=True)
class DataContract(ColumnsByRole):
    """The roles and types of a table's columns, in column order."""

    fields: tuple[FieldMetadata, ...]

    def role_items(self) -> Iterable[tuple[str, ColumnRole]]:
        return ((f.name, f.role) for f in self.fields)

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ContractError(f"The contract lists these columns more than once: {format_values(repeated)}.")

    def __getitem__(self, name: str) -> FieldMetadata:
        for item in self.fields:
            if item.name == name:
                return item
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(item.name == name for item in self.fields)

    @property
    def weight(self) -> str | None:
        weights = self.with_role(ColumnRole.WEIGHT)
        if len(weights) > 1:
            raise ContractError(f"Only one weight column is allowed, the contract has {', '.join(weights)}.")
        return weights[0] if weights else None

    @property
    def household(self) -> str | None:
        """The household-id column, if the contract marks one (``is_household_id``)."""
        return self._single(ColumnRole.HOUSEHOLD, "household-id")

    @property
    def entity(self) -> str | None:
        """The person-id column, if the contract marks one (``is_entity_id``): one person may have several rows."""
        return self._single(ColumnRole.ENTITY, "person-id")

    def _single(self, role: ColumnRole, label: str) -> str | None:
        names = self.with_role(role)
        if len(names) > 1:
            raise ContractError(f"Only one {label} column is allowed, the contract has {', '.join(names)}.")
        return names[0] if names else None

    def ordinal_orders(self) -> dict[str, tuple[Any, ...]]:
        """Declared orders of the ordinal columns, by column name."""
        return {f.name: f.ordinal_values for f in self.fields if f.ordinal_values is not None}

    def ordered_columns(self) -> frozenset[str]:
        """Columns whose values are ordered (numerical, ordinal, date)."""
        return frozenset(f.name for f in self.fields if f.is_ordered)

    def updated(self, name: str, **changes: Any) -> DataContract:
        """A copy with one field changed (``role=``, ``statistical_type=``, ``ordinal_values=``)."""
        if name not in self:
            raise ContractError(f"The contract has no column '{name}'.")
        return DataContract(tuple(replace(f, **changes) if f.name == name else f for f in self.fields))

    def with_roles(self, roles: Mapping[str, ColumnRole]) -> DataContract:
        """A copy in which the named columns take the given roles."""
        return DataContract(
            tuple(replace(f, role=ColumnRole(roles[f.name])) if f.name in roles else f for f in self.fields)
        )

    def validate(self, data: pd.DataFrame) -> None:
        """Check that every column exists and ordinal values cover the data; raise :class:`ContractError`."""
        missing = [f.name for f in self.fields if f.name not in data.columns]
        if missing:
            raise ContractError(f"The contract names columns the data does not have: {format_values(missing)}.")
        self.weight  # noqa: B018 -- raises on several weight columns
        self.household  # noqa: B018 -- raises on several household-id columns
        self.entity  # noqa: B018 -- raises on several person-id columns
        for item in self.fields:
            column = data[item.name]
            if item.ordinal_values is not None:
                declared = pd.Index(item.ordinal_values)
                values = pd.Index(column.dropna().unique())
                undeclared = values.difference(declared) if len(values) else values
                if len(undeclared):
                    raise ContractError(
                        f"Column '{item.name}' has values missing from its ordinal_values: "
                        f"{format_values(list(undeclared))}."
                    )
            if item.role == ColumnRole.WEIGHT:
                numbers = pd.to_numeric(column, errors="coerce")
                if numbers.isna().any() or (numbers <= 0).any():
                    raise ContractError(f"Weight column '{item.name}' must hold positive numbers in every row.")
            numeric_types = (StatisticalType.NUMERICAL, StatisticalType.COORDINATE)
            if item.statistical_type in numeric_types and item.role != ColumnRole.IDENTIFIER:
                numbers = pd.to_numeric(column.dropna(), errors="coerce")
                if numbers.isna().any():
                    bad = column.dropna()[numbers.isna()].unique()[:5]
                    raise ContractError(
                        f"Column '{item.name}' is {item.statistical_type.value} but holds non-numbers: "
                        f"{format_values(list(bad))}."
                    )

    def to_dict(self) -> dict[str, Any]:
        return {"field_metadata": [f.to_dict() for f in self.fields]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DataContract:
        if not isinstance(obj, Mapping) or not isinstance(obj.get("field_metadata"), list):
            raise ContractError("A data contract is a JSON object with a 'field_metadata' list.")
        return cls(tuple(FieldMetadata.from_dict(item) for item in obj["field_metadata"]))

    @classmethod
    def from_json(cls, text: str) -> DataContract:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ContractError(f"The contract is not valid JSON: {exc.msg} (line {exc.lineno}).") from exc
        return cls.from_dict(obj)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DataContract:
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise ContractError(f"Cannot read the contract {path}: {exc.strerror or exc}.") from exc
        return cls.from_json(text)

    @classmethod
    def for_columns(
        cls,
        data: pd.DataFrame,
        *,
        quasi_identifiers: Iterable[str] = (),
        sensitive: Iterable[str] = (),
        identifiers: Iterable[str] = (),
        weight: str | None = None,
        household: str | None = None,
        entity: str | None = None,
    ) -> DataContract:
        """A contract for ``data`` with types inferred from the values and the given roles."""
        roles: dict[str, ColumnRole] = {}
        for names, role in (
            (quasi_identifiers, ColumnRole.QUASI_IDENTIFIER),
            (sensitive, ColumnRole.SENSITIVE),
            (identifiers, ColumnRole.IDENTIFIER),
            ((weight,) if weight else (), ColumnRole.WEIGHT),
            ((household,) if household else (), ColumnRole.HOUSEHOLD),
            ((entity,) if entity else (), ColumnRole.ENTITY),
        ):
            for name in names:
                roles[name] = role
        return cls(
            tuple(_inferred_field(data[c], str(c), roles.get(str(c), ColumnRole.INSENSITIVE)) for c in data.columns)
        )


def _inferred_field(column: pd.Series, name: str, role: ColumnRole) -> FieldMetadata:
    stat_type = infer_statistical_type(column)
    order = tuple(column.cat.categories) if stat_type == StatisticalType.ORDINAL else None
    return FieldMetadata(name, role, stat_type, order)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


# --- suggestions -------------------------------------------------------------------------------------------------

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_PHONE = re.compile(r"^\+?[\d\s().-]{7,}$")
_UK_POSTCODE = re.compile(r"^[A-Za-z]{1,2}\d[A-Za-z\d]?\s*\d[A-Za-z]{2}$|^[A-Za-z]{1,2}\d[A-Za-z\d]?$")
_ID_NAME = re.compile(
    r"(^|_|\b)(id|uuid|guid|ssn|nhs|nino|passport|account|iban|mrn|patient[_ ]?id|record[_ ]?id|customer[_ ]?id)"
    r"($|_|\b)|(^|_)(e-?mail|phone|mobile|telephone|tel|first[_ ]?name|last[_ ]?name|surname|full[_ ]?name|"
    r"name|address|street)($|_)",
    re.IGNORECASE,
)
_QI_NAME = re.compile(
    r"age|sex|gender|birth|dob|zip|postcode|post_code|postal|district|race|ethnic|marital|education|occupation|"
    r"country|region|city|town|religion|nationality|height|weight_kg|size|hair|eye",
    re.IGNORECASE,
)
_SENSITIVE_NAME = re.compile(
    r"diagnos|disease|illness|condition|salary|income|amount|transaction|balance|hiv|religion|sexual|criminal|"
    r"health|medical|treatment",
    re.IGNORECASE,
)
# The name ends with the coordinate word, after at most one prefix word ("home_lat"); "long_term" does not match.
_COORDINATE_NAME = re.compile(r"^(?:[A-Za-z0-9]+[_ .-])?(lat|latitude|lon|lng|long|longitude)$", re.IGNORECASE)
_WEIGHT_NAME = re.compile(r"^(sampling_)?weights?$|_weights?$|^wgt|^w$", re.IGNORECASE)
# pid, person_id, patient_id, client_no ...: the person a row belongs to, when the values repeat (several rows each)
_PERSON_NAME = re.compile(r"^(pid|(person|patient|client|member|individual|subject)[_ ]?(id|no|number|key))$", re.I)
# hid, ori_hid, hh_id, hhid, household, household_id, household number: a household identifier (sdcMicro's hhId)
_HOUSEHOLD_NAME = re.compile(r"(^|_)(hh_?id|hid|household([_ ]?(id|number|no))?)$", re.IGNORECASE)


@dataclass(frozen=True)
class Suggestion:
    """A suggested role and type for a column, with the reason shown to the user."""

    name: str
    role: ColumnRole
    statistical_type: StatisticalType
    reason: str


#: An integer column with at most this many distinct values (and at least :data:`CODED_MIN_ROWS` values) is taken
#: for coded categories (``roof`` 1-5 in sdcMicro's testdata) and suggested as nominal.
CODED_MAX_VALUES = 10
CODED_MIN_ROWS = 20


def infer_statistical_type(column: pd.Series) -> StatisticalType:
    """Guess a column's type from its dtype and values (numbers, dates, UK postcodes, else nominal).

    Integer columns with 2 to :data:`CODED_MAX_VALUES` distinct values in at least :data:`CODED_MIN_ROWS` values
    are coded categories (survey codes such as ``roof`` 1-5, the key variables of the IHSN SDC practice guide's
    examples): nominal, so that they get category groups instead of numeric intervals."""
    if isinstance(column.dtype, pd.CategoricalDtype) and column.dtype.ordered:
        return StatisticalType.ORDINAL
    if pd.api.types.is_bool_dtype(column):
        return StatisticalType.NOMINAL
    if pd.api.types.is_integer_dtype(column) and _is_coded(column):
        return StatisticalType.NOMINAL
    if pd.api.types.is_numeric_dtype(column):
        return StatisticalType.COORDINATE if _is_coordinate(column) else StatisticalType.NUMERICAL
    if pd.api.types.is_datetime64_any_dtype(column):
        return StatisticalType.DATE
    sample = column.dropna().astype(str).head(500)
    if len(sample) and sample.str.match(_UK_POSTCODE).mean() > 0.95:
        return StatisticalType.POSTCODE
    if len(sample) and sample.str.match(r"^\d{4}-\d{2}-\d{2}").mean() > 0.95:
        return StatisticalType.DATE
    return StatisticalType.NOMINAL


def _is_coded(column: pd.Series) -> bool:
    """An integer column of few distinct values, each seen at least twice on average (see
    :func:`infer_statistical_type`)."""
    present = int(column.notna().sum())
    return present >= CODED_MIN_ROWS and 2 <= column.nunique(dropna=True) <= CODED_MAX_VALUES


def _is_coordinate(column: pd.Series) -> bool:
    """A numeric column named like a latitude / longitude (``lat``, ``home_latitude``, ``Lng`` ...) whose values
    all lie in the range of that coordinate (and at least one is present)."""
    match = _COORDINATE_NAME.match(str(column.name).strip())
    if match is None:
        return False
    values = column.dropna()
    limit = 90.0 if match.group(1).lower().startswith("lat") else 180.0
    return len(values) > 0 and bool(((values >= -limit) & (values <= limit)).all())


def suggest_roles(data: pd.DataFrame) -> tuple[Suggestion, ...]:
    """Suggest a role and type for each column, by name and content.

    Direct identifiers: columns named like ids, names, e-mails, phones or addresses, or whose values look like
    e-mail addresses or phone numbers, or (for text columns) are distinct in (almost) every row.
    Weights: the first positive numeric column named like a weight (another one is insensitive). Household id: the
    first column named like one (``hid``, ``hh_id``, ``household``), with fewer distinct values than rows. Person id:
    the first column named like one (``pid``, ``person_id``, ``patient_id``) whose values repeat (several rows per
    person) and are never missing; a unique person id is a direct identifier. Sensitive: names like diagnosis,
    income, amount.
    Quasi-identifiers: names of typical demographic attributes, postcodes, and the remaining low-cardinality
    columns. Everything else: insensitive. Suggestions are starting points for the user to confirm.
    """
    n = len(data)
    out = []
    household_found = weight_found = person_found = False
    for name in data.columns:
        column = data[name]
        label = str(name)
        stat_type = infer_statistical_type(column)
        sample = column.dropna().astype(str).head(1000)
        distinct_share = column.nunique(dropna=True) / max(int(column.notna().sum()), 1)
        if len(sample) and sample.str.match(_EMAIL).mean() > 0.9:
            role, reason = ColumnRole.IDENTIFIER, "values look like e-mail addresses"
        elif (
            len(sample)
            and not pd.api.types.is_numeric_dtype(column)
            and sample.str.match(_PHONE).mean() > 0.9
            and sample.str.count(r"\d").mean() >= 9
        ):
            role, reason = ColumnRole.IDENTIFIER, "values look like phone numbers"
        elif not household_found and _HOUSEHOLD_NAME.search(label) and column.nunique(dropna=True) < n:
            role, reason = ColumnRole.HOUSEHOLD, "the name suggests a household id: its members can be linked"
            household_found = True
        elif (
            not person_found and _PERSON_NAME.search(label) and column.notna().all() and column.nunique(dropna=True) < n
        ):
            role, reason = ColumnRole.ENTITY, "a person id whose values repeat: one person has several rows"
            person_found = True
        elif _ID_NAME.search(label):
            role, reason = ColumnRole.IDENTIFIER, "the name suggests a direct identifier"
        elif _WEIGHT_NAME.search(label) and pd.api.types.is_numeric_dtype(column) and (column > 0).all():
            if weight_found:  # one sampling weight per table; another weight is no key an attacker knows
                role, reason = ColumnRole.INSENSITIVE, "named like a weight, but the table has a sampling weight"
            else:
                role, reason = ColumnRole.WEIGHT, "positive numbers named like a sampling weight"
                weight_found = True
        elif n >= 20 and distinct_share > 0.95 and stat_type == StatisticalType.NOMINAL:
            role, reason = ColumnRole.IDENTIFIER, "a different value in almost every row"
        elif stat_type == StatisticalType.POSTCODE:
            role, reason = ColumnRole.QUASI_IDENTIFIER, "values look like postcodes"
        elif _SENSITIVE_NAME.search(label):
            role, reason = ColumnRole.SENSITIVE, "the name suggests a sensitive attribute"
        elif _QI_NAME.search(label):
            role, reason = ColumnRole.QUASI_IDENTIFIER, "the name suggests a demographic attribute"
        elif column.nunique(dropna=True) <= 50:
            role, reason = ColumnRole.QUASI_IDENTIFIER, "few distinct values, could be known to an attacker"
        else:
            role, reason = ColumnRole.INSENSITIVE, "many distinct values, not a typical identifier"
        out.append(Suggestion(label, role, stat_type, reason))
    return tuple(out)


def suggest_contract(data: pd.DataFrame) -> DataContract:
    """A :class:`DataContract` built from :func:`suggest_roles`."""
    return DataContract(tuple(_inferred_field(data[s.name], s.name, s.role) for s in suggest_roles(data)))
