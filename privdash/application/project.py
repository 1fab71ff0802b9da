"""The project file: one file that holds everything a steward set up for a table, so that work survives the browser.

A project (``.privdash``, JSON inside) holds

* the dataset's **fingerprint** (:class:`TableSummary`: its rows, its column names, the order-independent digest
  the privacy-budget ledger knows a table by (:class:`~privdash.data.fingerprint.TableFingerprint`) and one digest per
  column) and **where it came from** (a built-in dataset, a server source, an upload, a file);
* the **data contract** (roles, statistical types, ordinal orders) and the **generalization hierarchies**;
* the missing-value policy and the **targets**;
* the Fix page's **steps** (with the **chosen solution** of its search: the ``pick`` of the last search step) and,
  from the command line, a **recipe**;
* the page settings a link carries beyond those (the Postcodes page's settings, the model-based risk methods, the
  "violating classes only" switch);
* the report's **sign-off fields** (name, role, decision, conditions, date);
* the **DP ledger's reference** (the population's identity in the ledger, and the ledger file on the command line).

A project never holds a data value of the table unless the steward asks for it (``include_table``): the table then
goes inside as Parquet (base64), and opening the project re-creates the dataset. Two parts of the contract do hold
values of the quasi-identifiers, because they are settings the steward made about those values: the order of an
ordinal column lists its categories, and a hierarchy lists the values it generalizes. The digests are SHA-256 of
hashed rows and columns: they confirm that a table is the same one, they do not reveal it.

The file format (version 1)::

    {"format": "privdash-project", "version": 1, "saved": "<UTC time>", "made_by": "privdash <version>",
     "dataset": {"title": ..., "origin": ..., "rows": n, "columns": [...], "digest": "<hex>",
                 "column_digests": {"<column>": "<hex>", ...}},
     "contract": {"field_metadata": [...]}, "hierarchies": {"<column>": {...}}, "missing": "value",
     "targets": {"k": 5, ...}, "steps": [...], "solution": {"step": i, "pick": n} | null, "recipe": {...} | null,
     "view": {"violating": false, "geo": {...}, "model_risk": [...]},
     "signoff": {"name": ..., "role": ..., "decision": ..., "conditions": ..., "date": ...},
     "ledger": {"identity": ..., "path": ...} | null,
     "table": {"format": "parquet", "base64": "..."}  (only with include_table)}

Reading is strict: a file that is not JSON, not a project, of a newer version, with an unknown key or a damaged
part raises :class:`~privdash.errors.DataReadError` naming what is wrong; nothing in a project is executed (the
steps and the recipe are checked settings; the table is read by the ordinary table reader with its limits).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import os
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdash.data.contract import ColumnRole, DataContract
from privdash.errors import ColumnError, ContractError, DataReadError, ParameterError, PrivdashError
from privdash.measure.classes import MissingPolicy
from privdash.targets import PrivacyTargets
from privdash.transform.steps import Recipe

__all__ = [
    "DECISION_LABELS",
    "FORMAT",
    "MAX_PROJECT_BYTES",
    "MAX_SETTINGS_BYTES",
    "SIGNOFF_FIELDS",
    "VERSION",
    "LedgerReference",
    "Project",
    "TableDifferences",
    "TableSummary",
]

#: The value of the ``format`` key, and the version this privdash writes and reads.
FORMAT = "privdash-project"
VERSION = 1
#: The largest project file read (a project with its table inside); past it the file is refused unread.
MAX_PROJECT_BYTES = 300_000_000
#: The largest project without a table (settings only: contract, hierarchies, steps ...).
MAX_SETTINGS_BYTES = 20_000_000
#: The sign-off fields of the report, and the decisions.
SIGNOFF_FIELDS = ("name", "role", "decision", "conditions", "date")
#: Each decision with the words the Data page's select and the report's sign-off block show for it.
DECISION_LABELS = {"approve": "Approve release", "conditions": "Approve with conditions", "reject": "Reject"}
DECISIONS = ("", *DECISION_LABELS)
MAX_SIGNOFF_CHARS = 4_000
#: The most a project may name: columns, steps, characters of a title.
MAX_COLUMNS = 10_000
MAX_TITLE_CHARS = 500
_KEYS = (
    "format",
    "version",
    "saved",
    "made_by",
    "dataset",
    "contract",
    "hierarchies",
    "missing",
    "targets",
    "steps",
    "solution",
    "recipe",
    "view",
    "signoff",
    "ledger",
    "table",
)
_VIEW_KEYS = ("violating", "geo", "model_risk")
_HEX = re.compile(r"[0-9a-f]{64}")


def _damaged(what: str) -> DataReadError:
    return DataReadError(f"The project file is damaged: {what}")


# --- the table's fingerprint ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableDifferences:
    """What differs between the table a project was saved with and another: rows, columns missing or added, and
    columns whose values differ (by their digests). ``same`` when nothing does."""

    rows: tuple[int, int]
    missing: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    same_content: bool = True

    @property
    def same(self) -> bool:
        return self.same_content and self.rows[0] == self.rows[1] and not (self.missing or self.added or self.changed)

    def sentences(self) -> list[str]:
        """The differences in words, one sentence each (empty when the tables are the same)."""
        if self.same:
            return []
        out = []
        saved, now = self.rows
        if saved != now:
            out.append(f"The project was saved with {saved:,} rows; this table has {now:,}.")
        if self.missing:
            out.append(f"Columns of the project missing here: {_names(self.missing)}.")
        if self.added:
            out.append(f"Columns here the project does not know: {_names(self.added)}.")
        if self.changed:
            out.append(f"Columns whose values differ: {_names(self.changed)}.")
        if not out:
            out.append("The rows differ (same columns and number of rows, other values).")
        return out

    def describe(self) -> str:
        return " ".join(self.sentences()) or "This is the table the project was saved with."


def _names(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(repr(str(n)[:80]) for n in names[:limit])
    return shown + (f" and {len(names) - limit:,} more" if len(names) > limit else "")


@dataclass(frozen=True)
class TableSummary:
    """The fingerprint of a table in a project: no value of it, only counts, names and digests.

    ``digest`` is the :class:`~privdash.data.fingerprint.TableFingerprint` digest (SHA-256 of the sorted column names
    and row hashes: the same for the same rows in any order and however numbers are typed; the key the privacy-budget
    ledger knows a table by); ``column_digests`` is, per column, the SHA-256 of its sorted value hashes.
    """

    rows: int
    columns: tuple[str, ...]
    digest: str
    column_digests: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, frame: pd.DataFrame) -> TableSummary:
        from privdash.data.fingerprint import TableFingerprint, row_hashes

        columns = tuple(str(c) for c in frame.columns)
        digests = {}
        for position, name in enumerate(columns):
            hashes = np.sort(row_hashes(frame.iloc[:, [position]]))
            digests[name] = hashlib.sha256(b"privdash column v1\x00" + hashes.tobytes()).hexdigest()
        return cls(len(frame), columns, TableFingerprint.of(frame).digest, digests)

    def differences(self, other: TableSummary) -> TableDifferences:
        """How ``other`` (the table at hand) differs from this one (the table the project was saved with)."""
        mine, theirs = set(self.columns), set(other.columns)
        changed = tuple(
            name
            for name in self.columns
            if name in theirs and self.column_digests.get(name) not in (None, other.column_digests.get(name))
        )
        return TableDifferences(
            rows=(self.rows, other.rows),
            missing=tuple(c for c in self.columns if c not in theirs),
            added=tuple(c for c in other.columns if c not in mine),
            changed=changed,
            same_content=self.digest == other.digest,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "columns": list(self.columns),
            "digest": self.digest,
            "column_digests": dict(self.column_digests),
        }

    @classmethod
    def from_dict(cls, obj: Any) -> TableSummary:
        if not isinstance(obj, Mapping):
            raise _damaged("its dataset part is not an object.")
        rows, columns, digest = obj.get("rows"), obj.get("columns"), obj.get("digest")
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise _damaged("the number of rows of its dataset is not a whole number.")
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise _damaged("the columns of its dataset are not a list of names.")
        if len(columns) > MAX_COLUMNS:
            raise _damaged(f"its dataset has {len(columns):,} columns, more than the {MAX_COLUMNS:,} allowed.")
        if not isinstance(digest, str) or not _HEX.fullmatch(digest):
            raise _damaged("the digest of its dataset is not a SHA-256.")
        digests = obj.get("column_digests", {})
        if not isinstance(digests, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and _HEX.fullmatch(v) for k, v in digests.items()
        ):
            raise _damaged("the column digests of its dataset are malformed.")
        return cls(rows, tuple(columns), digest, dict(digests))


# --- the ledger's reference -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerReference:
    """Where the table's privacy budget is kept: the population's ``identity`` in the ledger, and the ledger file
    (``path``; None: the dashboard's ledger in its store folder). The ledger knows the table by the project's
    :attr:`TableSummary.digest`."""

    identity: str | None = None
    path: str | None = None

    def __post_init__(self) -> None:
        from privdash.dp.ledger import check_identity

        if self.identity is not None:
            object.__setattr__(self, "identity", check_identity(self.identity))
        if self.path is not None and (not isinstance(self.path, str) or len(self.path) > 4_000):
            raise ParameterError("The ledger's path must be a text of at most 4,000 characters.")

    def to_dict(self) -> dict[str, Any]:
        return {"identity": self.identity, "path": self.path}


# --- the project ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Project:
    """Everything a steward set up for a table (see the module docstring); never a data value unless ``table`` is
    given (the table's Parquet bytes)."""

    dataset: TableSummary
    contract: DataContract
    title: str = ""
    origin: str = ""
    missing: MissingPolicy = MissingPolicy.VALUE
    targets: PrivacyTargets = field(default_factory=PrivacyTargets)
    hierarchies: Mapping[str, Any] = field(default_factory=dict)
    steps: tuple[Mapping[str, Any], ...] = ()
    recipe: Recipe | None = None
    view: Mapping[str, Any] = field(default_factory=dict)
    signoff: Mapping[str, str] = field(default_factory=dict)
    ledger: LedgerReference | None = None
    table: bytes | None = None
    saved: str = ""
    made_by: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "missing", MissingPolicy.parse(self.missing))
        object.__setattr__(self, "signoff", check_signoff(self.signoff))
        if len(self.title) > MAX_TITLE_CHARS or len(self.origin) > MAX_TITLE_CHARS:
            raise ParameterError(f"A project's title and origin are at most {MAX_TITLE_CHARS} characters.")
        unknown = sorted(set(self.view) - set(_VIEW_KEYS))
        if unknown:
            raise ParameterError(f"Unknown page settings in a project: {', '.join(unknown)[:200]}.")

    # --- what it says -------------------------------------------------------------------------------------------

    @property
    def solution(self) -> dict[str, int] | None:
        """The chosen solution of the Fix page's search: the position of the last search step and its ``pick``
        (1: the least lossy), or None without a search step."""
        for index in range(len(self.steps) - 1, -1, -1):
            step = self.steps[index]
            if isinstance(step, Mapping) and step.get("kind") == "search":
                pick = step.get("pick", 1)
                return {"step": index + 1, "pick": int(pick) if isinstance(pick, int | float) else 1}
        return None

    @property
    def needed_columns(self) -> tuple[str, ...]:
        """The columns the project's settings use: every column with a role other than "other", and every column
        with a hierarchy. A table without one of them cannot be opened with the project."""
        named = [f.name for f in self.contract.fields if f.role != ColumnRole.INSENSITIVE]
        named += [name for name in self.hierarchies if name not in named]
        return tuple(named)

    def check_table(self, frame: pd.DataFrame) -> TableDifferences:
        """What differs between ``frame`` and the table the project was saved with."""
        return self.dataset.differences(TableSummary.of(frame))

    def require_columns(self, columns: Sequence[str], label: str = "This table") -> None:
        """Raise :class:`ColumnError` when a column the project needs is not among ``columns``."""
        present = set(columns)
        missing = [name for name in self.needed_columns if name not in present]
        if missing:
            raise ColumnError(
                f"{label} lacks column(s) the project uses: {_names(missing)}; open the project with the table it "
                "was saved for."
            )

    def table_frame(self) -> pd.DataFrame | None:
        """The table kept inside the project (read with the table reader's limits), or None."""
        if self.table is None:
            return None
        from privdash.data.tables import read_table

        return read_table(self.table, filename="project-table.parquet", max_bytes=MAX_PROJECT_BYTES)

    # --- the file -----------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "saved": self.saved or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "made_by": self.made_by or _made_by(),
            "dataset": {"title": self.title, "origin": self.origin, **self.dataset.to_dict()},
            "contract": self.contract.to_dict(),
            "hierarchies": dict(self.hierarchies),
            "missing": self.missing.value,
            "targets": self.targets.to_dict(),
            "steps": [dict(step) for step in self.steps],
            "solution": self.solution,
            "recipe": self.recipe.to_dict() if self.recipe is not None else None,
            "view": dict(self.view),
            "signoff": {name: self.signoff.get(name, "") for name in SIGNOFF_FIELDS},
            "ledger": self.ledger.to_dict() if self.ledger is not None else None,
        }
        if self.table is not None:
            out["table"] = {"format": "parquet", "base64": base64.b64encode(self.table).decode("ascii")}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False, default=_plain_number)

    def to_bytes(self) -> bytes:
        return (self.to_json() + "\n").encode("utf-8")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the project to ``path`` atomically (a temporary file beside it, then renamed)."""
        target = Path(path)
        data = self.to_bytes()
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            temp.write_bytes(data)
            os.replace(temp, target)
        except OSError as exc:
            raise DataReadError(f"Cannot write the project {target}: {exc.strerror or exc}.") from None
        finally:
            temp.unlink(missing_ok=True)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, max_bytes: int = MAX_PROJECT_BYTES) -> Project:
        """The project in the file at ``path``; :class:`DataReadError` for a damaged, foreign or newer file."""
        try:
            with open(path, "rb") as handle:
                raw = handle.read(max_bytes + 1)
        except OSError as exc:
            raise DataReadError(f"Cannot read the project {path}: {exc.strerror or exc}.") from None
        return cls.from_bytes(raw, max_bytes=max_bytes)

    @classmethod
    def from_bytes(cls, raw: bytes, *, max_bytes: int = MAX_PROJECT_BYTES) -> Project:
        """The project in a file's bytes (UTF-8 JSON)."""
        if len(raw) > max_bytes:
            raise DataReadError(
                f"The project file is larger than {max_bytes / 1e6:,.0f} MB, the most read; a project without its "
                "table is a few kilobytes."
            )
        if not raw.strip():
            raise DataReadError("The project file is empty.")
        try:
            obj = json.loads(raw.decode("utf-8-sig"), parse_constant=_no_constant)
        except UnicodeDecodeError:
            raise DataReadError("This is not a privdash project file (it is not UTF-8 text).") from None
        except (ValueError, RecursionError) as exc:
            raise DataReadError(f"This is not a privdash project file (not valid JSON: {str(exc)[:120]}).") from None
        return cls.from_dict(obj, size=len(raw))

    @classmethod
    def from_dict(cls, obj: Any, *, size: int = 0) -> Project:
        """The project a parsed JSON object describes; strict (see the module docstring)."""
        if not isinstance(obj, Mapping) or obj.get("format") != FORMAT:
            raise DataReadError(
                'This is not a privdash project file (it has no "format": "privdash-project"); open a .privdash '
                "file saved from the Data page or by privdash project save."
            )
        version = obj.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise _damaged(f"its version {str(version)[:20]!r} is not a positive whole number.")
        if version > VERSION:
            raise DataReadError(
                f"This project was saved by a newer privdash (project version {version}; this privdash reads version "
                f"{VERSION}). Update privdash to open it."
            )
        unknown = sorted(str(key) for key in obj if key not in _KEYS)
        if unknown:
            raise _damaged(f"it has unknown part(s) {', '.join(repr(k[:40]) for k in unknown[:5])}.")
        if obj.get("table") is None and size > MAX_SETTINGS_BYTES:
            raise DataReadError(
                f"The project file holds {size / 1e6:,.0f} MB of settings, more than the "
                f"{MAX_SETTINGS_BYTES / 1e6:,.0f} MB a project without its table may."
            )
        dataset = obj.get("dataset")
        summary = TableSummary.from_dict(dataset)
        assert isinstance(dataset, Mapping)  # from_dict refuses anything else
        title, origin = dataset.get("title", ""), dataset.get("origin", "")
        if not isinstance(title, str) or not isinstance(origin, str):
            raise _damaged("the title or origin of its dataset is not a text.")
        try:
            contract = DataContract.from_dict(obj.get("contract") or {})
        except ContractError as exc:
            raise _damaged(f"its contract: {exc}") from None
        try:
            targets = PrivacyTargets.from_dict(obj.get("targets") or {})
        except (ParameterError, TypeError) as exc:
            raise _damaged(f"its targets: {exc}") from None
        recipe_obj = obj.get("recipe")
        try:
            recipe = Recipe.from_dict(recipe_obj) if recipe_obj is not None else None
        except ParameterError as exc:
            raise _damaged(f"its recipe: {exc}") from None
        steps, view = _checked_view(obj.get("steps", []), obj.get("view", {}))
        hierarchies = obj.get("hierarchies", {})
        if not isinstance(hierarchies, Mapping) or not all(isinstance(v, Mapping) for v in hierarchies.values()):
            raise _damaged("its hierarchies are not an object of columns.")
        if len(hierarchies) > MAX_COLUMNS:
            raise _damaged(f"it has hierarchies for more than {MAX_COLUMNS:,} columns.")
        ledger_obj = obj.get("ledger")
        try:
            if ledger_obj is None:
                ledger = None
            elif isinstance(ledger_obj, Mapping) and set(ledger_obj) <= {"identity", "path"}:
                ledger = LedgerReference(ledger_obj.get("identity"), ledger_obj.get("path"))
            else:
                raise _damaged("its ledger reference is malformed.")
            project = cls(
                dataset=summary,
                contract=contract,
                title=title,
                origin=origin,
                missing=MissingPolicy.parse(obj.get("missing", "value")),
                targets=targets,
                hierarchies=dict(hierarchies),
                steps=steps,
                recipe=recipe,
                view=view,
                signoff=obj.get("signoff") or {},
                ledger=ledger,
                table=_table_bytes(obj.get("table")),
                saved=str(obj.get("saved", ""))[:40],
                made_by=str(obj.get("made_by", ""))[:80],
            )
        except DataReadError:
            raise
        except (PrivdashError, TypeError, ValueError) as exc:
            raise _damaged(str(exc)) from None
        return project

    def with_signoff(self, **fields: str) -> Project:
        return replace(self, signoff={**self.signoff, **fields})


def check_signoff(value: Any) -> dict[str, str]:
    """The sign-off fields (name, role, decision, conditions, date), texts; :class:`ParameterError` otherwise."""
    if not isinstance(value, Mapping):
        raise ParameterError("The sign-off fields must be an object.")
    unknown = sorted(str(k) for k in value if k not in SIGNOFF_FIELDS)
    if unknown:
        known = ", ".join(SIGNOFF_FIELDS)
        raise ParameterError(f"Unknown sign-off field(s): {', '.join(unknown)[:200]} (known: {known}).")
    out = {}
    for name in SIGNOFF_FIELDS:
        text = value.get(name) or ""
        if not isinstance(text, str) or len(text) > MAX_SIGNOFF_CHARS:
            raise ParameterError(
                f"The sign-off field {name} must be a text of at most {MAX_SIGNOFF_CHARS:,} characters."
            )
        if text:
            out[name] = text
    if out.get("decision", "") not in DECISIONS:
        raise ParameterError(f"The sign-off decision must be one of {', '.join(DECISIONS[1:])}.")
    return out


def _checked_view(steps: Any, view: Any) -> tuple[tuple[Mapping[str, Any], ...], dict[str, Any]]:
    """The Fix page's steps and the page settings, checked as a link's view state checks them."""
    from privdash.application.state import StateError, ViewState

    if not isinstance(steps, list) or not all(isinstance(step, Mapping) for step in steps):
        raise _damaged("its steps are not a list of objects.")
    if not isinstance(view, Mapping) or set(view) - set(_VIEW_KEYS):
        raise _damaged(f"its page settings are malformed (known: {', '.join(_VIEW_KEYS)}).")
    model_risk = view.get("model_risk", [])
    if not isinstance(model_risk, list) or not all(isinstance(m, str) for m in model_risk):
        raise _damaged("its model-based risk methods are not a list of names.")
    try:
        state = ViewState().updated(
            fix=tuple(steps),
            geo=view.get("geo", {}) or {},
            model_risk=tuple(model_risk),
            violating=bool(view.get("violating", False)),
        )
    except StateError as exc:
        raise _damaged(str(exc)) from None
    from privdash.application.fixes import check_spec

    try:
        for step in state.fix:
            check_spec(step)  # checked as the Fix page checks it; kept as it was written
    except PrivdashError as exc:
        raise _damaged(f"a step: {exc}") from None
    out: dict[str, Any] = {}
    if state.violating:
        out["violating"] = True
    if state.geo:
        out["geo"] = dict(state.geo)
    if state.model_risk:
        out["model_risk"] = list(state.model_risk)
    return tuple(state.fix), out


def _table_bytes(obj: Any) -> bytes | None:
    if obj is None:
        return None
    if not isinstance(obj, Mapping) or obj.get("format") != "parquet" or not isinstance(obj.get("base64"), str):
        raise _damaged('its table is not {"format": "parquet", "base64": ...}.')
    try:
        return base64.b64decode(obj["base64"], validate=True)
    except (binascii.Error, ValueError):
        raise _damaged("its table is not valid base64.") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _plain_number(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("a project cannot hold NaN or infinity")
        return value
    raise TypeError(f"{type(value).__name__} is not JSON")


def _made_by() -> str:
    from privdash import __version__

    return f"privdash {__version__}"


def table_bytes(frame: pd.DataFrame) -> bytes:
    """The table as Parquet bytes (for ``include_table``); :class:`ParameterError` when it cannot be written."""
    buffer = io.BytesIO()
    try:
        frame.rename(columns=str).to_parquet(buffer, index=False)
    except (ValueError, TypeError, ImportError) as exc:
        raise ParameterError(f"The table cannot be kept inside the project: {str(exc)[:200]}.") from None
    return buffer.getvalue()


# --- the dashboard's view state <-> a project ------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenedProject:
    """A project opened in the dashboard: the view state it becomes, how the table differs from the one it was
    saved with (None when it was not compared), and notes for the page."""

    state: Any
    differences: TableDifferences | None = None
    notes: tuple[str, ...] = ()


def project_from_state(
    services: Any,
    state: Any,
    *,
    signoff: Mapping[str, str] | None = None,
    identity: str | None = None,
    include_table: bool = False,
) -> Project:
    """The project of a dashboard view (:class:`~privdash.application.state.ViewState`) of ``services``: its
    dataset's fingerprint, contract, hierarchies, targets, steps and page settings, with the sign-off fields and the
    ledger identity given; the table's values only with ``include_table``."""
    from privdash.application import hierarchies as hs
    from privdash.application.storage import DatasetNotFound

    if not state.dataset:
        raise DatasetNotFound("No dataset is open; open one before saving a project.")
    loaded = services.dataset(state.dataset)
    if loaded.source is not None and include_table:
        raise ParameterError(f"'{loaded.title}' is a server-side source: its table cannot be kept inside a project.")
    contract = services.contract(loaded, state)
    stored = hs.dataset_hierarchies(services, state)
    hierarchies = json.loads(hs.set_to_json(stored))["columns"] if stored.columns else {}
    summary: TableSummary = services.cache.get_or_build(
        ("project-fingerprint", loaded.id, loaded.version), lambda: TableSummary.of(loaded.frame)
    )
    origin = loaded.id if loaded.is_demo or loaded.source is not None else "upload"
    view: dict[str, Any] = {}
    if state.violating:
        view["violating"] = True
    if state.geo:
        view["geo"] = dict(state.geo)
    if state.model_risk:
        view["model_risk"] = list(state.model_risk)
    return Project(
        dataset=summary,
        contract=contract,
        recipe=cached_recipe(services, state) if state.fix else None,
        title=loaded.title[:MAX_TITLE_CHARS],
        origin=origin,
        missing=state.missing,
        targets=replace(state.targets, sensitive=()),
        hierarchies=hierarchies,
        steps=tuple(state.fix),
        view=view,
        signoff=dict(signoff or {}),
        ledger=LedgerReference(identity) if identity and str(identity).strip() else None,
        table=table_bytes(loaded.frame) if include_table else None,
    )


def cached_recipe(services: Any, state: Any) -> Recipe | None:
    """The recipe of the view's Fix-page steps when the Fix page has already applied them (kept in the worker's
    cache or on disk), so that the command line can re-apply them; None otherwise (nothing is computed here)."""
    from privdash.application.fixes import FixRun
    from privdash.application.fixruns import FixRuns

    runs = FixRuns(services)
    try:
        key = runs.state_key(state)
        run = services.cache.get(("fix-run", key))
        if run is None:
            run = runs.disk.get(key)
        if not isinstance(run, FixRun) or run.error is not None or len(run.results) != len(state.fix):
            return None
        return run.recipe
    except (PrivdashError, OSError, ValueError, TypeError):
        return None


def open_project(services: Any, project: Project, *, current: Any = None, session: str = "") -> OpenedProject:
    """The view state a project opens in the dashboard.

    The table: the one inside the project (stored as a new upload of ``session``), else the built-in dataset or
    server source it was saved on, else the dataset of ``current`` (the open view). The table is compared with the
    project's fingerprint (:attr:`OpenedProject.differences`); a table without a column the project uses raises
    :class:`ColumnError`. Roles, types and orders come from the project's contract, its hierarchies are stored with
    an upload, and targets, steps and page settings are those saved.
    """
    from privdash.application import hierarchies as hs
    from privdash.application.services import DEMO_PREFIX, state_from_contract
    from privdash.application.sources import SOURCE_PREFIX
    from privdash.application.state import DEFAULTS, ViewState
    from privdash.application.storage import DatasetNotFound

    notes: list[str] = []
    if project.table is not None:
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", project.title.rsplit(".", 1)[0])[:80] or "project"
        info = services.ingest(project.table, filename=f"{stem}.parquet", session=session)
        loaded = services.dataset(info.id)
        notes.append(f"The table kept in the project is open as {loaded.title}.")
    elif project.origin.startswith((DEMO_PREFIX, SOURCE_PREFIX)):
        loaded = services.dataset(project.origin)
    elif current is not None and current.dataset:
        loaded = services.dataset(current.dataset)
    else:
        raise DatasetNotFound(
            f"The project was saved for {project.title or 'an uploaded table'}, and does not hold its values: upload "
            "the table first, then open the project."
        )
    project.require_columns(loaded.columns, f"'{loaded.title}'")
    differences = None
    if loaded.source is not None:
        notes.append("A server-side source is not compared with the project's fingerprint (only a preview is read).")
    else:
        summary: TableSummary = services.cache.get_or_build(
            ("project-fingerprint", loaded.id, loaded.version), lambda: TableSummary.of(loaded.frame)
        )
        differences = project.dataset.differences(summary)
    targets = project.targets
    release = {
        name: value
        for name, value in targets.to_dict().items()
        if name not in ("k", "l", "t", "sensitive", "t_distance", "max_risk") and value is not None
    }
    base = ViewState(
        missing=project.missing,
        k=targets.k,
        l=targets.l if targets.l is not None else DEFAULTS.l,
        t=targets.t if targets.t is not None else DEFAULTS.t,
        max_risk=targets.max_risk if targets.max_risk is not None else 0.0,
        release=release,
        violating=bool(project.view.get("violating", False)),
        fix=tuple(project.steps),
        geo=dict(project.view.get("geo", {})),
        model_risk=tuple(project.view.get("model_risk", ())),
    )
    contract = DataContract(tuple(f for f in project.contract.fields if f.name in set(loaded.columns)))
    state = state_from_contract(loaded, contract, base.updated(dataset=loaded.id))
    try:
        services.contract(loaded, state).validate(loaded.frame)
    except ContractError as exc:
        raise ContractError(f"The project's contract does not fit '{loaded.title}': {exc}") from None
    if project.hierarchies:
        if hs.editable(loaded.id):
            state = hs.state_with_contract_hierarchies(
                services, state, json.dumps({"hierarchies": dict(project.hierarchies)})
            )
        else:
            notes.append("A built-in table keeps its own hierarchies; the project's are not applied to it.")
    return OpenedProject(state, differences, tuple(notes))
