"""The view state carried by the URL, so that a link reproduces exactly what its sender saw.

The state holds the dataset id, every column's role and type, the orders of ordinal columns, the missing-value
policy and the targets. It never holds a data value: ordinal orders are stored as a permutation of the column's
distinct values sorted as text (see :func:`order_permutation`), so a link reveals column names and settings only.

Wire format: the query parameter ``s`` is ``base64url(zlib(json))`` without padding. The JSON uses short keys and
leaves out defaults, so a typical link stays a few hundred characters long. A state that cannot be decoded is
reported (:class:`StateError`) instead of silently showing another view.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlencode

from privdash.data.contract import ColumnRole, ColumnsByRole, StatisticalType
from privdash.errors import PrivdashError
from privdash.measure.classes import MissingPolicy
from privdash.measure.model_risk import parse_model_risk_methods
from privdash.targets import PrivacyTargets
from privdash.validation import Interval, check_param

__all__ = [
    "DATASET_ID",
    "DEFAULTS",
    "HIERARCHIES_ID",
    "MAX_ENCODED",
    "QUERY_KEY",
    "StateError",
    "ViewState",
    "apply_order_permutation",
    "order_permutation",
    "sorted_labels",
]

QUERY_KEY = "s"
_VERSION = 1
#: The names a link's release targets (wire key ``q``) may set: those of :class:`PrivacyTargets` beyond k, l, t and
#: max_risk.
RELEASE_KEYS = tuple(
    item.name
    for item in fields(PrivacyTargets)
    if item.name not in ("k", "l", "t", "sensitive", "t_distance", "max_risk")
)
#: The longest ``s`` parameter read (and the longest state kept for a ``?l=`` link).
MAX_ENCODED = 64_000
#: Bounds of everything a link or a callback can put into a view state, checked while it is read, so that a crafted
#: link cannot make the server build something huge (a curve over 60 million values of k, a million-column state).
#: The largest decompressed JSON of a state, in bytes (a zlib bomb in ``s`` stops here).
MAX_STATE_BYTES = 1_000_000
#: Columns a state may describe, characters of a column name, values of one ordinal order.
MAX_COLUMNS = 10_000
MAX_NAME_CHARS = 1_000
MAX_ORDER_VALUES = 10_000
#: Steps of the Fix page's list; nesting, list length and text length inside a step or the postcode settings.
MAX_FIX_STEPS = 50
MAX_DEPTH = 8
MAX_LIST_ITEMS = MAX_COLUMNS
#: Numbers in one list of a fix step (the widths or bins of a hierarchy's levels: each level is computed over the
#: whole column, so 10,000 of them on a large table would take minutes).
MAX_NUMBER_LIST = 100
MAX_TEXT_CHARS = 10_000
#: The largest k and l (no table of the server holds more records than this; larger numbers are a typing error).
MAX_COUNT = 1_000_000_000
#: The largest magnitude of a number in a fix step or the postcode settings (beyond it a float loses whole units).
MAX_NUMBER = 2.0**53
#: The form of a dataset id: a built-in dataset (``demo:<name>``) or an upload's 128-bit random token. Anything else
#: in a link (a path, a very long text, control characters) is refused while the link is read.
DATASET_ID = re.compile(r"(?:demo|source):[A-Za-z0-9_-]{1,64}|[A-Za-z0-9_-]{22}")

#: The form of the id of a dataset's stored hierarchies (128 bits of a digest, URL-safe base64).
HIERARCHIES_ID = re.compile(r"[A-Za-z0-9_-]{22}")

_ROLE_CODE = {
    ColumnRole.IDENTIFIER: "i",
    ColumnRole.QUASI_IDENTIFIER: "q",
    ColumnRole.SENSITIVE: "s",
    ColumnRole.INSENSITIVE: "n",
    ColumnRole.WEIGHT: "w",
    ColumnRole.HOUSEHOLD: "h",
    ColumnRole.ENTITY: "e",
}
_CODE_ROLE = {code: role for role, code in _ROLE_CODE.items()}
_TYPE_CODE = {
    StatisticalType.NUMERICAL: "N",
    StatisticalType.NOMINAL: "C",
    StatisticalType.ORDINAL: "O",
    StatisticalType.DATE: "D",
    StatisticalType.POSTCODE: "P",
    StatisticalType.COORDINATE: "G",
}
_CODE_TYPE = {code: kind for kind, code in _TYPE_CODE.items()}


class StateError(PrivdashError):
    """A link's view state is damaged or from an incompatible version."""


@dataclass(frozen=True)
class ViewState(ColumnsByRole):
    """Everything needed to rebuild a view of the dashboard, apart from the page (the URL path).

    Attributes
    ----------
    dataset
        Server-side dataset id (``demo:<name>`` for a built-in dataset), or None before one is chosen.
    roles
        Role of every column, in column order.
    types
        Statistical type of every column.
    orders
        For ordinal columns, the permutation of :func:`sorted_labels` giving the declared order.
    missing
        Missing-value policy of the equivalence classes: ``value``, ``wildcard`` or ``drop``.
    k, l, t
        Targets of k-anonymity (classes of at least ``k`` records), distinct l-diversity and t-closeness.
    max_risk
        The highest acceptable re-identification risk of one record (tau): a record is at risk when its risk is
        strictly greater. (Wire key ``r``.)
    release
        The release targets beyond k that are set, by their names in :class:`~privdash.targets.PrivacyTargets`
        (``global_risk``, ``household_risk``, ``average_risk``, ``k_map``, ``delta_presence``,
        ``population_uniques``, ``population_uniques_estimator``). (Wire key ``q``, left out when empty.)
    violating
        Per-class table shows only the classes that fail a target.
    fix
        The Fix page's step list, in order: compact JSON objects whose meaning belongs to that page
        (``dashboard.pages.fix``); settings only, never data values.
    geo
        The Postcodes page's settings (population table, level, strategy, threshold ...), a compact JSON object
        whose meaning is defined in :mod:`privdash.application.postcodes`.
    model_risk
        The model-based risk methods (sdcMicro ``modRisk``) the Risk page fits, in sdcMicro's spelling; empty: none
        (they fit a log-linear model, so they run on request). Wire key ``mr``.
    hierarchies
        The id of the dataset's generalization hierarchies kept on the server with an upload
        (:mod:`privdash.application.hierarchies`): a digest of the stored set, never one of its values.
    """

    dataset: str | None = None
    roles: Mapping[str, ColumnRole] = field(default_factory=dict)
    types: Mapping[str, StatisticalType] = field(default_factory=dict)
    orders: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    missing: MissingPolicy = MissingPolicy.VALUE
    k: int = 5
    l: int = 2  # noqa: E741
    t: float = 0.2
    max_risk: float = 0.2
    release: Mapping[str, Any] = field(default_factory=dict)
    violating: bool = False
    fix: tuple[Mapping[str, Any], ...] = ()
    geo: Mapping[str, Any] = field(default_factory=dict)
    hierarchies: str | None = None
    model_risk: tuple[str, ...] = ()

    # --- derived views ------------------------------------------------------------------------------------------

    def role_items(self) -> Iterable[tuple[str, ColumnRole]]:
        return self.roles.items()

    @property
    def targets(self) -> PrivacyTargets:
        """The view's release targets (one definition: :class:`~privdash.targets.PrivacyTargets`); a
        ``max_risk`` of 0 means no risk target."""
        return PrivacyTargets(
            k=self.k,
            l=self.l,
            t=self.t,
            max_risk=self.max_risk or None,
            sensitive=tuple(self.sensitive),
            **dict(self.release),
        )

    def updated(self, **changes: Any) -> ViewState:
        """A copy with some fields changed (validated like a decoded state)."""
        return _validated(replace(self, **changes))

    def with_columns(
        self,
        roles: Mapping[str, ColumnRole | str] | None = None,
        types: Mapping[str, StatisticalType | str] | None = None,
    ) -> ViewState:
        """A copy in which the named columns take new roles and/or types (other columns keep theirs)."""
        new_roles = dict(self.roles)
        for name, role in (roles or {}).items():
            new_roles[name] = _member(ColumnRole, role, f"the role of '{str(name)[:80]}'")
        new_types = dict(self.types)
        orders = dict(self.orders)
        for name, kind in (types or {}).items():
            new_types[name] = _member(StatisticalType, kind, f"the type of '{str(name)[:80]}'")
            if new_types[name] != StatisticalType.ORDINAL:
                orders.pop(name, None)
        return self.updated(roles=new_roles, types=new_types, orders=orders)

    def with_quasi_identifiers(self, quasi_identifiers: Sequence[str], sensitive: Sequence[str]) -> ViewState:
        """A copy where exactly ``quasi_identifiers`` are QIs and exactly ``sensitive`` are sensitive.

        Columns that lose the QI or sensitive role become insensitive; a column named in both lists is a QI.
        """
        for names in (quasi_identifiers, sensitive):
            if not isinstance(names, list | tuple) or not all(isinstance(name, str) for name in names):
                raise StateError("Quasi-identifiers and sensitive attributes must be lists of column names.")
        qis, sas = set(quasi_identifiers), set(sensitive) - set(quasi_identifiers)
        roles: dict[str, ColumnRole] = {}
        for name, role in self.roles.items():
            if name in qis:
                roles[name] = ColumnRole.QUASI_IDENTIFIER
            elif name in sas:
                roles[name] = ColumnRole.SENSITIVE
            elif role in (ColumnRole.QUASI_IDENTIFIER, ColumnRole.SENSITIVE):
                roles[name] = ColumnRole.INSENSITIVE
            else:
                roles[name] = role
        return self.updated(roles=roles)

    # --- wire format ------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The compact JSON object of the wire format (defaults left out)."""
        out: dict[str, Any] = {"v": _VERSION}
        if self.dataset is not None:
            out["d"] = self.dataset
        if self.roles:
            out["c"] = [
                [name, _ROLE_CODE[role] + _TYPE_CODE[self.types.get(name, StatisticalType.NOMINAL)]]
                for name, role in self.roles.items()
            ]
        if self.orders:
            out["o"] = {name: list(perm) for name, perm in self.orders.items()}
        defaults = DEFAULTS
        for key, value in (
            ("m", self.missing.value if self.missing != defaults.missing else None),
            ("k", self.k if self.k != defaults.k else None),
            ("l", self.l if self.l != defaults.l else None),
            ("t", self.t if self.t != defaults.t else None),
            ("r", self.max_risk if self.max_risk != defaults.max_risk else None),
            ("q", dict(self.release) if self.release else None),
            ("x", 1 if self.violating else None),
            ("f", [dict(step) for step in self.fix] if self.fix else None),
            ("g", dict(self.geo) if self.geo else None),
            ("h", self.hierarchies),
            ("mr", list(self.model_risk) if self.model_risk else None),
        ):
            if value is not None:
                out[key] = value
        return out

    def encode(self) -> str:
        """The value of the ``s`` query parameter."""
        raw = json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False).encode()
        return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")

    def to_search(self) -> str:
        """The URL's search part (``?s=...``), or an empty string for the empty state."""
        if self == DEFAULTS:
            return ""
        return "?" + urlencode({QUERY_KEY: self.encode()})

    def href(self, path: str) -> str:
        """A link to ``path`` carrying this state."""
        return path + self.to_search()

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ViewState:
        """Parse the compact JSON object; raise :class:`StateError` on anything malformed."""
        if not isinstance(obj, Mapping):
            raise StateError("The link's view state is not an object.")
        if obj.get("v") != _VERSION:
            raise StateError(f"The link was made by an incompatible version (state version {obj.get('v')!r}).")
        _check_lengths(obj)
        try:
            roles: dict[str, ColumnRole] = {}
            types: dict[str, StatisticalType] = {}
            for name, code in obj.get("c", []):
                if not isinstance(name, str) or not isinstance(code, str) or len(code) != 2:
                    raise StateError("The link's column settings are malformed.")
                roles[name] = _CODE_ROLE[code[0]]
                types[name] = _CODE_TYPE[code[1]]
            orders = {str(name): tuple(int(i) for i in perm) for name, perm in dict(obj.get("o", {})).items()}
            state = cls(
                dataset=_optional_str(obj.get("d")),
                roles=roles,
                types=types,
                orders=orders,
                missing=MissingPolicy.parse(obj.get("m", DEFAULTS.missing.value)),
                k=_target(obj.get("k", DEFAULTS.k), "k", _COUNT),
                l=_target(obj.get("l", DEFAULTS.l), "l", _COUNT),
                t=float(_target(obj.get("t", DEFAULTS.t), "t", _REAL)),
                max_risk=float(_target(obj.get("r", DEFAULTS.max_risk), "max_risk", _REAL)),
                release=_json_object(obj.get("q", {}), "release targets"),
                violating=bool(obj.get("x", 0)),
                fix=tuple(obj.get("f", ())),
                geo=dict(obj.get("g", {})),
                hierarchies=_optional_str(obj.get("h")),
                model_risk=tuple(obj.get("mr", ())),
            )
        except StateError:
            raise
        except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise StateError("The link's view state is damaged; open the dashboard without it.") from exc
        return _validated(state)

    @classmethod
    def decode(cls, encoded: str | None) -> ViewState:
        """Parse the ``s`` query parameter (None or empty: the default state)."""
        if not encoded:
            return DEFAULTS
        if len(encoded) > MAX_ENCODED:
            raise StateError("The link's view state is too long.")
        try:
            padded = encoded + "=" * (-len(encoded) % 4)
            inflater = zlib.decompressobj()
            raw = inflater.decompress(base64.urlsafe_b64decode(padded.encode("ascii")), MAX_STATE_BYTES)
            too_large = bool(inflater.unconsumed_tail)
            obj: Any = None if too_large else json.loads(raw.decode("utf-8"))
        except (binascii.Error, zlib.error, UnicodeError, ValueError, RecursionError) as exc:
            raise StateError("The link's view state is damaged; it may have been cut when copied.") from exc
        if too_large:
            raise StateError(f"The link's view state unpacks to more than {MAX_STATE_BYTES:,} bytes.")
        return cls.from_dict(obj)

    @classmethod
    def from_search(cls, search: str | None) -> ViewState:
        """Parse a URL search string such as ``?s=...``."""
        values = parse_qs((search or "").lstrip("?")).get(QUERY_KEY, [])
        return cls.decode(values[0] if values else None)


_E = TypeVar("_E", bound=Enum)


def _member(kind: type[_E], value: Any, what: str) -> _E:
    """``value`` as a member of the enumeration ``kind``; StateError naming the choices otherwise."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(member.value) for member in kind)
        raise StateError(f"{what[:1].upper()}{what[1:]} must be one of {choices}, got {str(value)[:40]!r}.") from None


def _optional_str(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise StateError("The link's dataset id is malformed.")
    return value


def _target(value: Any, name: str, constraint: Interval) -> Any:
    """A target of a link checked by ``constraint`` (a number, or its text); StateError otherwise."""
    if not isinstance(value, int | float | str):
        raise StateError(f"The target {name} must be {constraint.describe()}, got {str(value)[:40]!r}.")
    return check_param(value, constraint, f"The target {name}", text=True, error=StateError)


#: The constraints of the targets of a link (:func:`_target`).
_COUNT = Interval(int, 1, MAX_COUNT)
_REAL = Interval(float, None, None)


def _check_lengths(obj: Mapping[str, Any]) -> None:
    """Refuse a state whose lists are longer than the bounds, before anything is built from them."""
    columns, orders, steps = obj.get("c", []), obj.get("o", {}), obj.get("f", [])
    if isinstance(columns, list | tuple) and len(columns) > MAX_COLUMNS:
        raise StateError(f"The link describes {len(columns):,} columns, more than the {MAX_COLUMNS:,} allowed.")
    if isinstance(orders, Mapping) and len(orders) > MAX_COLUMNS:
        raise StateError(f"The link orders {len(orders):,} columns, more than the {MAX_COLUMNS:,} allowed.")
    if isinstance(steps, list | tuple) and len(steps) > MAX_FIX_STEPS:
        raise StateError(f"The link has {len(steps):,} fix steps, more than the {MAX_FIX_STEPS} allowed.")


def _check_sizes(state: ViewState) -> None:
    """The bounds of :data:`MAX_COLUMNS` and the others, on a state however it was made."""
    for what, mapping in (("columns", state.roles), ("column types", state.types), ("orders", state.orders)):
        if len(mapping) > MAX_COLUMNS:
            raise StateError(f"The view has {len(mapping):,} {what}, more than the {MAX_COLUMNS:,} allowed.")
        for name in mapping:
            if len(name) > MAX_NAME_CHARS:
                raise StateError(f"A column name in the view is longer than {MAX_NAME_CHARS:,} characters.")
    for name, perm in state.orders.items():
        if len(perm) > MAX_ORDER_VALUES:
            raise StateError(f"The order of column '{name[:80]}' lists more than {MAX_ORDER_VALUES:,} values.")


def _check_plain(value: Any, what: str, depth: int = 0) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH`, longer lists or texts, and numbers out of range."""
    if depth > MAX_DEPTH:
        raise StateError(f"The link's {what} is nested too deeply.")
    if isinstance(value, str):
        if len(value) > MAX_TEXT_CHARS:
            raise StateError(f"The link's {what} holds a text longer than {MAX_TEXT_CHARS:,} characters.")
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        if not math.isfinite(value) or abs(value) > MAX_NUMBER:
            raise StateError(f"The link's {what} holds a number out of range ({str(value)[:40]}).")
    elif isinstance(value, Mapping):
        if len(value) > MAX_LIST_ITEMS:
            raise StateError(f"The link's {what} has more than {MAX_LIST_ITEMS:,} settings.")
        for key, item in value.items():
            _check_plain(key, what, depth + 1)
            _check_plain(item, what, depth + 1)
    elif isinstance(value, list | tuple):
        if len(value) > MAX_LIST_ITEMS:
            raise StateError(f"The link's {what} holds a list of more than {MAX_LIST_ITEMS:,} items.")
        if len(value) > MAX_NUMBER_LIST and any(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            raise StateError(
                f"The link's {what} holds a list of more than {MAX_NUMBER_LIST} numbers (a hierarchy has at most "
                f"{MAX_NUMBER_LIST} levels)."
            )
        for item in value:
            _check_plain(item, what, depth + 1)


def _json_object(value: Any, what: str) -> dict[str, Any]:
    """A plain JSON object (string keys; JSON scalars, lists and objects as values), checked by a round trip."""
    if not isinstance(value, Mapping):
        raise StateError(f"The link's {what} is not an object.")
    _check_plain(value, what)
    try:
        text = json.dumps(dict(value), allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise StateError(f"The link's {what} is not plain JSON.") from exc
    return dict(json.loads(text))


def _validated(state: ViewState) -> ViewState:
    if len(state.fix) > MAX_FIX_STEPS:
        raise StateError(f"The view has {len(state.fix):,} fix steps, more than the {MAX_FIX_STEPS} allowed.")
    try:
        state = replace(
            state,
            missing=MissingPolicy.parse(state.missing),
            roles={str(name): ColumnRole(role) for name, role in state.roles.items()},
            types={str(name): StatisticalType(kind) for name, kind in state.types.items()},
            orders={str(name): tuple(int(i) for i in perm) for name, perm in state.orders.items()},
            k=_target(state.k, "k", _COUNT),
            l=_target(state.l, "l", _COUNT),
            t=float(_target(state.t, "t", _REAL)),
            max_risk=float(_target(state.max_risk, "max_risk", _REAL)),
            release=_json_object(state.release, "release targets"),
            violating=bool(state.violating),
            fix=tuple(_json_object(step, "fix step") for step in state.fix),
            geo=_json_object(state.geo, "postcode settings"),
            model_risk=parse_model_risk_methods(list(state.model_risk)) if state.model_risk else (),
        )
    except StateError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise StateError(f"Invalid view settings: {exc}") from exc
    _check_sizes(state)
    if state.dataset is not None and (not isinstance(state.dataset, str) or not DATASET_ID.fullmatch(state.dataset)):
        raise StateError("The link's dataset id is malformed; open the dataset from the Data page.")
    if state.hierarchies is not None and not HIERARCHIES_ID.fullmatch(str(state.hierarchies)):
        raise StateError("The link's hierarchy id is malformed; open the dataset from the Data page.")
    unknown = sorted(set(state.release) - set(RELEASE_KEYS))
    if unknown:
        raise StateError(f"The link's release targets are unknown: {', '.join(unknown)[:200]}.")
    if not 0 <= state.max_risk <= 1:  # 0 is allowed here: no risk target
        raise StateError("The target max_risk must lie in [0, 1].")
    try:
        state.targets  # noqa: B018 (the one definition of valid targets validates them)
    except PrivdashError as exc:
        raise StateError(f"The link's targets are invalid: {exc}") from exc
    for name, perm in state.orders.items():
        if sorted(perm) != list(range(len(perm))):
            raise StateError(f"The order of column '{name}' in the link is not a permutation.")
    return state


DEFAULTS = ViewState()


def sorted_labels(values: Sequence[Any]) -> list[Any]:
    """Distinct non-missing values of a column, sorted by their text (the reference order of permutations)."""
    unique = {str(v): v for v in values if v is not None and v == v}
    return [unique[key] for key in sorted(unique)]


def order_permutation(order: Sequence[Any], values: Sequence[Any]) -> tuple[int, ...]:
    """Encode ``order`` (every distinct value of ``values``, lowest first) as positions in :func:`sorted_labels`.

    Raises :class:`StateError` when ``order`` does not list exactly the distinct values.
    """
    reference = [str(v) for v in sorted_labels(values)]
    position = {label: i for i, label in enumerate(reference)}
    wanted = [str(v) for v in order]
    if sorted(wanted) != sorted(reference) or len(set(wanted)) != len(wanted):
        raise StateError("An ordinal order must list every distinct value of the column exactly once.")
    return tuple(position[label] for label in wanted)


def apply_order_permutation(permutation: Sequence[int], values: Sequence[Any]) -> list[Any]:
    """Decode a permutation made by :func:`order_permutation` back into the ordered values."""
    reference = sorted_labels(values)
    if sorted(permutation) != list(range(len(reference))):
        raise StateError("The ordinal order in the link no longer matches the column's values.")
    return [reference[i] for i in permutation]
