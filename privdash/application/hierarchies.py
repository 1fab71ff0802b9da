"""A dataset's generalization hierarchies: imported from ARX CSV files or made in the Data page's editor, kept with
the upload on the server, and used by the Fix page's generalization and search instead of the default ones.

What a column's hierarchy can be
    * an ARX hierarchy file (one row per value, the value first and coarser levels to the right; read by the core's
      :func:`~privdash.transform.hierarchy.read_arx_hierarchy`), checked to cover every value of the column;
    * rule settings of the core's builders (:data:`EDITOR_BUILDERS`: intervals with widths and bottom / top codes,
      intervals of equal frequency, dates, code prefixes, frequency groups), built by
      :func:`~privdash.transform.hierarchy.build_hierarchy`, so the hierarchy records its resolved rule and
      the Fix page's recipe re-applies the rule;
    * named groups of categories, in levels (``{"builder": "groups", "levels": [[{"name": ..., "members": [...]},
      ...], ...]}``): level ``j`` groups values of level ``j - 1``, a value in no group keeps its label, and ``*``
      tops the levels; a table hierarchy (the recipe records its rows).

    Any of them may have groups renamed at a level (``labels``: ``{level: {label: new label}}``); a renamed
    hierarchy is a table.

Where they are kept
    With the upload, in its folder of the dataset store: ``<store>/<dataset id>/hierarchies/<id>.json``, one file
    per version of the dataset's set (``0600``, written atomically), deleted with the dataset when it expires (at
    most :data:`MAX_VERSIONS` versions and :data:`MAX_FOLDER_BYTES` bytes per dataset; past them an edit is refused
    with a message). The
    ``<id>`` is the first 128 bits of the SHA-256 of the set's JSON (URL-safe base64), and it is all that the view
    state (and so a share link) carries: :attr:`~privdash.application.state.ViewState.hierarchies`. A link opens
    the very version its sender saw; the values stay on the server, readable by whoever holds the dataset's id.
    Built-in tables and server sources keep the hierarchies they come with (ARX's for Adult).

The stored form (:func:`set_to_json`)::

    {"version": 1, "columns": {"<column>": {"source": "file" | "editor" | "contract", "file"?: "<name>.csv",
                                            "settings"?: {...}, "labels"?: {"1": {"old": "new"}},
                                            "hierarchy": {"rule": {...}} | {"rows": [[leaf, ...], ...]}}}}

The exported data contract carries the same ``columns`` object under ``hierarchies`` (:func:`contract_json`);
importing such a contract stores them again (:func:`state_with_contract_hierarchies`). Nothing here imports Dash.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdash.application.fixes import check_rule
from privdash.application.services import LoadedDataset, Services, clean_filename
from privdash.application.state import HIERARCHIES_ID, ViewState
from privdash.application.storage import DatasetNotFound, is_upload_id, private_file
from privdash.data.contract import StatisticalType
from privdash.transform.hierarchy import (
    TOP,
    Hierarchy,
    HierarchyError,
    build_hierarchy,
    canonical_text,
    default_rule,
    read_arx_hierarchy,
    search_hierarchy,
    write_arx_hierarchy,
)

__all__ = [
    "EDITOR_BUILDERS",
    "MAX_FILE_BYTES",
    "MAX_VERSIONS",
    "ColumnHierarchy",
    "EditorForm",
    "EditorView",
    "GroupRow",
    "HierarchySet",
    "ImportOutcome",
    "LevelSummary",
    "arx_text",
    "build_column",
    "contract_json",
    "current_hierarchy",
    "dataset_hierarchies",
    "edit_column",
    "editable",
    "editor_form",
    "editor_view",
    "group_choices",
    "group_values",
    "groups_at",
    "import_files",
    "level_number",
    "level_summary",
    "match_column",
    "reference_hierarchies",
    "rename_group",
    "reset_column",
    "set_digest",
    "set_from_json",
    "set_to_json",
    "settings_from_form",
    "state_with_contract_hierarchies",
    "ungroup",
]

#: The builders of the editor and their names; ``groups`` is the editor's own (named groups of categories).
EDITOR_BUILDERS: dict[str, str] = {
    "intervals": "Intervals",
    "quantiles": "Intervals of equal frequency",
    "groups": "Categories (named groups)",
    "frequency": "Categories by frequency",
    "dates": "Dates",
    "prefix": "Code prefixes",
}
#: The largest hierarchy file read (an ARX file of a column with 100,000 values is a few MB).
MAX_FILE_BYTES = 10_000_000
#: Files of one import.
MAX_FILES = 50
#: Stored versions of one dataset's set (each edit stores one); past it, edits are refused.
MAX_VERSIONS = 500
#: The largest stored set, in bytes of JSON.
MAX_SET_BYTES = 20_000_000
#: The most the versions of one dataset's set may take together on disk (each edit adds one version).
MAX_FOLDER_BYTES = 100_000_000
#: Levels of named groups (a hierarchy of categories rarely needs more than a handful).
MAX_GROUP_LEVELS = 20
_FOLDER = "hierarchies"
_VERSION = 1
_SOURCES = ("file", "editor", "contract")


# --- the set of a dataset --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ColumnHierarchy:
    """The hierarchy of one column and where it came from.

    ``source`` is ``file`` (an ARX file, named by ``file``), ``editor`` (``settings``: rule settings or named
    groups) or ``contract`` (an imported data contract); ``labels`` renames groups per level.
    """

    hierarchy: Hierarchy
    source: str
    file: str | None = None
    settings: Mapping[str, Any] | None = None
    labels: Mapping[int, Mapping[str, str]] = field(default_factory=dict)

    def describe(self) -> str:
        """One line saying what the hierarchy is."""
        levels = f"{self.hierarchy.n_levels - 1} level(s) above the values"
        if self.source == "file":
            what = f"imported from {self.file}"
        elif self.source == "contract":
            what = "imported with a data contract"
        else:
            builder = str((self.settings or {}).get("builder", ""))
            what = f"made in the editor from {EDITOR_BUILDERS.get(builder, 'renamed groups').lower()}"
        renamed = sum(len(names) for names in self.labels.values())
        return f"{what[0].upper()}{what[1:]}, {levels}" + (f", {renamed} group(s) renamed" if renamed else "") + "."

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source}
        if self.file is not None:
            out["file"] = self.file
        if self.settings is not None:
            out["settings"] = _plain(self.settings)
        if self.labels:
            out["labels"] = {str(level): dict(names) for level, names in sorted(self.labels.items())}
        out["hierarchy"] = self.hierarchy.to_dict()
        return out


@dataclass(frozen=True, eq=False)
class HierarchySet:
    """The hierarchies of a dataset's columns (columns without one use the defaults)."""

    columns: Mapping[str, ColumnHierarchy] = field(default_factory=dict)

    def hierarchies(self) -> dict[str, Hierarchy]:
        return {name: item.hierarchy for name, item in self.columns.items()}

    def with_column(self, name: str, item: ColumnHierarchy | None) -> HierarchySet:
        columns = dict(self.columns)
        if item is None:
            columns.pop(name, None)
        else:
            columns[name] = item
        return HierarchySet(columns)


def set_to_json(hierarchies: HierarchySet) -> str:
    """The stored form of a set (see the module docstring), as compact JSON with sorted keys."""
    obj = {
        "version": _VERSION,
        "columns": {name: item.to_dict() for name, item in sorted(hierarchies.columns.items())},
    }
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def set_digest(text: str) -> str:
    """The id of a stored set: the first 128 bits of the SHA-256 of its JSON, URL-safe base64 (22 characters)."""
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode("utf-8")).digest()[:16]).decode().rstrip("=")


def set_from_json(text: str | Mapping[str, Any], frame: pd.DataFrame) -> HierarchySet:
    """Read a stored set (or the ``hierarchies`` object of a contract) for the table ``frame``.

    Rules are rebuilt over the table's columns; every hierarchy is checked to cover its column's values. Raises
    :class:`HierarchyError` naming the column for anything that does not fit.
    """
    try:
        obj = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise HierarchyError(f"The stored hierarchies are not valid JSON: {exc}.") from None
    columns_obj = obj.get("columns") if isinstance(obj, Mapping) and "columns" in obj else obj
    if not isinstance(columns_obj, Mapping):
        raise HierarchyError("Hierarchies must be a JSON object of columns.")
    columns: dict[str, ColumnHierarchy] = {}
    for name, entry in columns_obj.items():
        if name not in frame.columns:
            raise HierarchyError(f"There is a hierarchy for '{name}', which this table does not have.")
        if not isinstance(entry, Mapping):
            raise HierarchyError(f"The hierarchy of '{name}' must be an object.")
        source = entry.get("source", "contract")
        if source not in _SOURCES:
            source = "contract"
        settings = entry.get("settings")
        labels = _labels(entry.get("labels"), name)
        values = frame[str(name)]
        try:
            if "hierarchy" in entry:
                hierarchy = Hierarchy.from_dict(entry["hierarchy"], values)
            elif isinstance(settings, Mapping):
                hierarchy = build_column(settings, values, labels)
            else:
                hierarchy = Hierarchy.from_dict(entry, values)
            hierarchy.leaf_codes(values)
        except HierarchyError as exc:
            raise HierarchyError(f"The hierarchy of '{name}': {exc}") from None
        file = entry.get("file")
        columns[str(name)] = ColumnHierarchy(
            hierarchy,
            str(source),
            file=clean_filename(file) if isinstance(file, str) else None,
            settings=dict(settings) if isinstance(settings, Mapping) else None,
            labels=labels,
        )
    return HierarchySet(columns)


def _labels(obj: Any, name: str) -> dict[int, dict[str, str]]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise HierarchyError(f"The renamed groups of '{name}' must be an object of levels.")
    out: dict[int, dict[str, str]] = {}
    for level, names in obj.items():
        try:
            number = int(level)
        except (TypeError, ValueError):
            raise HierarchyError(f"The renamed groups of '{name}' name a level that is not a number.") from None
        if number < 1 or not isinstance(names, Mapping):
            raise HierarchyError(f"The renamed groups of '{name}' at level {level} are malformed.")
        out[number] = {str(old): str(new) for old, new in names.items()}
    return out


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=False))


# --- storage ----------------------------------------------------------------------------------------------------------


def editable(dataset_id: str | None) -> bool:
    """Whether a dataset's hierarchies can be imported and edited: uploads only (built-in tables and server sources
    keep the hierarchies they come with)."""
    return is_upload_id(dataset_id)


def _folder(services: Services, dataset_id: str) -> Path:
    if not editable(dataset_id):
        raise HierarchyError(
            "Hierarchies are kept with uploaded tables; upload the table to import or edit its hierarchies."
        )
    services.store.info(dataset_id)  # refuses an unknown or expired dataset
    return Path(services.store.root) / dataset_id / _FOLDER


def _store(services: Services, dataset_id: str, hierarchies: HierarchySet) -> str | None:
    """Store the set with the dataset and return its id (None for an empty set: the defaults)."""
    if not hierarchies.columns:
        return None
    text = set_to_json(hierarchies)
    data = text.encode("utf-8")
    if len(data) > MAX_SET_BYTES:
        raise HierarchyError(
            f"These hierarchies take {len(data) / 1e6:.0f} MB, more than the {MAX_SET_BYTES / 1e6:.0f} MB kept "
            "with a dataset."
        )
    digest = set_digest(text)
    folder = _folder(services, dataset_id)
    path = folder / f"{digest}.json"
    if path.is_file():
        return digest
    folder.mkdir(mode=0o700, exist_ok=True)
    versions = [p for p in folder.iterdir() if p.suffix == ".json"]
    used = sum(p.stat().st_size for p in versions)
    if len(versions) >= MAX_VERSIONS or used + len(data) > MAX_FOLDER_BYTES:
        raise HierarchyError(
            f"This dataset keeps {len(versions)} versions of its hierarchies ({used / 1e6:.0f} MB), the most kept "
            f"({MAX_VERSIONS} versions, {MAX_FOLDER_BYTES / 1e6:.0f} MB); upload the table again to start afresh."
        )
    temp = folder / f".tmp-{secrets.token_hex(8)}"
    try:
        private_file(temp, data)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return digest


def dataset_hierarchies(services: Services, state: ViewState) -> HierarchySet:
    """The hierarchies the state's link names (an empty set when it names none); raises :class:`HierarchyError`
    when they are no longer kept or do not fit the table."""
    digest = state.hierarchies
    if not digest or not state.dataset:
        return HierarchySet()
    if not HIERARCHIES_ID.fullmatch(digest) or not editable(state.dataset):
        raise HierarchyError("The link's hierarchies do not belong to an uploaded table.")
    dataset_id = state.dataset
    loaded = services.dataset(dataset_id)

    def read() -> HierarchySet:
        path = _folder(services, dataset_id) / f"{digest}.json"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise HierarchyError(
                "The hierarchies this link names are not kept on the server; import or edit them again."
            ) from None
        except OSError as exc:
            raise HierarchyError(f"The stored hierarchies cannot be read: {exc.strerror or exc}.") from None
        return set_from_json(text, loaded.frame)

    found: HierarchySet = services.cache.get_or_build(("dataset-hierarchies", dataset_id, loaded.version, digest), read)
    return found


def _state_with(services: Services, state: ViewState, hierarchies: HierarchySet) -> ViewState:
    digest = _store(services, str(state.dataset), hierarchies)
    return state.updated(hierarchies=digest)


# --- what the Fix page uses -------------------------------------------------------------------------------------------


def reference_hierarchies(
    services: Services, state: ViewState | None, given: Mapping[str, Hierarchy] | None = None
) -> dict[str, Hierarchy]:
    """The hierarchies the Fix page uses for the state's dataset: ``given`` (those that come with a built-in
    table), overridden by the ones stored with the upload. Hierarchies that can no longer be read are left out
    (the Data page says why)."""
    out = dict(given or {})
    if state is None:
        return out
    with contextlib.suppress(HierarchyError, DatasetNotFound):
        out.update(dataset_hierarchies(services, state).hierarchies())
    return out


def _check_column(loaded: LoadedDataset, column: str) -> None:
    """Raise :class:`HierarchyError` when the dataset has no column ``column``."""
    if column not in loaded.frame.columns:
        raise HierarchyError(f"The dataset has no column {str(column)[:120]!r}.")


def current_hierarchy(
    services: Services,
    loaded: LoadedDataset,
    state: ViewState,
    column: str,
    given: Mapping[str, Hierarchy] | None = None,
) -> tuple[Hierarchy, str, ColumnHierarchy | None]:
    """The hierarchy the Fix page uses for ``column``, a line saying what it is, and its stored entry (None for a
    default or a built-in table's hierarchy)."""
    stored = dataset_hierarchies(services, state).columns.get(column)
    if stored is not None:
        return stored.hierarchy, stored.describe(), stored
    if given and column in given:
        shipped = given[column]
        return shipped, f"The built-in table's hierarchy, {shipped.n_levels - 1} level(s) above the values.", None
    _check_column(loaded, column)
    kind = state.types.get(column, StatisticalType.NOMINAL)
    key = ("default-hierarchy", loaded.id, loaded.version, column, kind.value, state.k)
    hierarchy: Hierarchy = services.cache.get_or_build(
        key, lambda: search_hierarchy(loaded.frame[column], kind, state.k)
    )
    builder = str((hierarchy.rule or {}).get("builder", "groups"))
    name = EDITOR_BUILDERS.get(builder, builder).lower()
    text = (
        f"The default for a {kind.value.lower()} column ({name}), {hierarchy.n_levels - 1} level(s) above the values."
    )
    return hierarchy, text, None


# --- editing ----------------------------------------------------------------------------------------------------------


def build_column(
    settings: Mapping[str, Any], values: pd.Series, labels: Mapping[int, Mapping[str, str]] | None = None
) -> Hierarchy:
    """The hierarchy the editor's settings make over ``values``: a core builder's (rule settings, checked as the
    Fix page checks them) or named groups, then the renamed groups. Raises :class:`HierarchyError`."""
    if not isinstance(settings, Mapping) or settings.get("builder") not in EDITOR_BUILDERS:
        raise HierarchyError(f"Choose how to build the hierarchy: one of {', '.join(EDITOR_BUILDERS)}.")
    if settings["builder"] == "dates" and pd.api.types.is_numeric_dtype(values.dtype):
        raise HierarchyError(f"Dates need a column of dates or date text; '{values.name}' holds numbers.")
    if settings["builder"] == "groups":
        hierarchy = _groups_hierarchy(settings.get("levels"), values)
    else:
        try:
            rule = check_rule(dict(settings))
        except Exception as exc:  # FixError: the same messages as the Fix page's
            raise HierarchyError(str(exc)) from None
        hierarchy = build_hierarchy(rule, values)
    return _renamed(hierarchy, labels or {})


def _groups_hierarchy(levels: Any, values: pd.Series) -> Hierarchy:
    """Named groups in levels (see the module docstring) as a table hierarchy with ``*`` on top."""
    if not isinstance(levels, list):
        raise HierarchyError("Named groups need 'levels': a list of levels, each a list of groups.")
    if len(levels) > MAX_GROUP_LEVELS:
        raise HierarchyError(f"Named groups have at most {MAX_GROUP_LEVELS} levels, got {len(levels)}.")
    leaves = pd.Index(values.dropna().unique())
    if not len(leaves):
        raise HierarchyError("Cannot build a hierarchy: the column has no non-missing values.")
    current = np.asarray(canonical_text(leaves), dtype=object)
    columns: list[np.ndarray] = [np.asarray(leaves, dtype=object)]
    for number, groups in enumerate(levels, start=1):
        if not isinstance(groups, list):
            raise HierarchyError(f"Level {number} must be a list of groups.")
        known = set(current.tolist())
        parent: dict[str, str] = {}
        names: set[str] = set()
        for group in groups:
            if not isinstance(group, Mapping) or not isinstance(group.get("members"), list):
                raise HierarchyError(f"Each group of level {number} needs a 'name' and 'members'.")
            name = str(group.get("name", "")).strip()
            if not name:
                raise HierarchyError(f"A group of level {number} has no name.")
            members = [str(m) for m in group["members"]]
            unknown = [m for m in members if m not in known]
            if unknown:
                raise HierarchyError(
                    f"Level {number}: {', '.join(repr(m) for m in unknown[:5])} are not values of level {number - 1}."
                )
            again = [m for m in members if m in parent]
            if again:
                raise HierarchyError(f"Level {number}: {', '.join(repr(m) for m in again[:5])} are in two groups.")
            if name in names:
                raise HierarchyError(f"Level {number} has two groups named '{name}'.")
            names.add(name)
            parent.update(dict.fromkeys(members, name))
        clash = sorted(names & (known - set(parent)))
        if clash:
            raise HierarchyError(
                f"Level {number}: the group name '{clash[0]}' is a value left ungrouped at that level; choose "
                "another name."
            )
        current = np.asarray([parent.get(label, label) for label in current], dtype=object)
        columns.append(current)
    if len(set(current.tolist())) > 1 or len(columns) == 1:
        columns.append(np.full(len(leaves), TOP, dtype=object))
    return Hierarchy.from_rows(np.column_stack(columns))


def _renamed(hierarchy: Hierarchy, labels: Mapping[int, Mapping[str, str]]) -> Hierarchy:
    """The hierarchy with groups renamed per level (a table); the hierarchy itself when nothing is renamed."""
    if not any(labels.values()):
        return hierarchy
    matrix = hierarchy.matrix()
    for level, names in labels.items():
        if not 1 <= level <= hierarchy.max_level:
            raise HierarchyError(f"Groups are renamed at level {level}, which the hierarchy does not have.")
        text = np.asarray(canonical_text(hierarchy.labels[level]), dtype=object)
        missing = [old for old in names if old not in set(text.tolist())]
        if missing:
            raise HierarchyError(f"Level {level} has no group '{missing[0]}' to rename.")
        mapping = {str(label): names.get(str(text[i]), label) for i, label in enumerate(hierarchy.labels[level])}
        matrix[:, level] = [mapping.get(str(v), v) for v in matrix[:, level]]
    return Hierarchy.from_rows(matrix)


def edit_column(services: Services, state: ViewState, column: str, settings: Mapping[str, Any]) -> ViewState:
    """The state with ``column``'s hierarchy made from the editor's ``settings`` (stored with the dataset)."""
    loaded, current = _loaded_set(services, state, column)
    hierarchy = build_column(settings, loaded.frame[column])
    hierarchy.leaf_codes(loaded.frame[column])
    item = ColumnHierarchy(hierarchy, "editor", settings=_plain(dict(settings)))
    return _state_with(services, state, current.with_column(column, item))


def reset_column(services: Services, state: ViewState, column: str) -> ViewState:
    """The state without a stored hierarchy for ``column`` (the Fix page goes back to the default)."""
    _loaded, current = _loaded_set(services, state, column)
    return _state_with(services, state, current.with_column(column, None))


def _loaded_set(services: Services, state: ViewState, column: str) -> tuple[LoadedDataset, HierarchySet]:
    if not state.dataset:
        raise HierarchyError("No dataset is open.")
    if not editable(state.dataset):
        _folder(services, state.dataset)  # raises with the reason
    loaded = services.dataset(state.dataset)
    if column not in loaded.columns:
        raise HierarchyError(f"This table has no column '{column}'.")
    return loaded, dataset_hierarchies(services, state)


def _groups_settings(current: HierarchySet, column: str) -> dict[str, Any]:
    item = current.columns.get(column)
    settings = item.settings if item is not None and item.source == "editor" else None
    if settings is not None and settings.get("builder") == "groups":
        return _plain(dict(settings))
    return {"builder": "groups", "levels": []}


def group_values(
    services: Services, state: ViewState, column: str, level: int, members: Sequence[str], name: str
) -> ViewState:
    """The state with a new group ``name`` of ``members`` (labels of level ``level - 1``) at ``level`` of the
    column's named groups; a column whose hierarchy is not made of named groups starts with none."""
    loaded, current = _loaded_set(services, state, column)
    settings = _groups_settings(current, column)
    levels: list[list[dict[str, Any]]] = settings["levels"]
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= len(levels) + 1:
        raise HierarchyError(f"Groups go at level 1 to {len(levels) + 1}, got {level}.")
    chosen = [str(m) for m in members]
    if len(chosen) < 1:
        raise HierarchyError("Select the values to group.")
    if not str(name or "").strip():
        raise HierarchyError("Name the group.")
    if level == len(levels) + 1:
        levels.append([])
    groups = levels[level - 1]
    same = next((g for g in groups if g["name"] == str(name).strip()), None)
    if same is not None:  # adding to a group of that name
        same["members"] = list(dict.fromkeys([*same["members"], *chosen]))
    else:
        groups.append({"name": str(name).strip(), "members": chosen})
    del loaded
    return edit_column(services, state, column, settings)


def ungroup(services: Services, state: ViewState, column: str, level: int, name: str) -> ViewState:
    """The state without the named group ``name`` at ``level`` (its members keep their labels there)."""
    _loaded, current = _loaded_set(services, state, column)
    settings = _groups_settings(current, column)
    levels: list[list[dict[str, Any]]] = settings["levels"]
    if not 1 <= level <= len(levels) or not any(g["name"] == name for g in levels[level - 1]):
        raise HierarchyError(f"Level {level} has no named group '{name}'.")
    levels[level - 1] = [g for g in levels[level - 1] if g["name"] != name]
    while levels and not levels[-1]:
        levels.pop()
    if not levels:
        return reset_column(services, state, column)
    return edit_column(services, state, column, settings)


def rename_group(services: Services, state: ViewState, column: str, level: int, old: str, new: str) -> ViewState:
    """The state with the group ``old`` at ``level`` of the column's hierarchy labelled ``new`` (any hierarchy:
    intervals, dates, imported files; it is kept as a table from then on)."""
    loaded, current = _loaded_set(services, state, column)
    new = str(new or "").strip()
    if not new:
        raise HierarchyError("Give the group's new label.")
    hierarchy, _text, stored = current_hierarchy(services, loaded, state, column)
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= hierarchy.max_level:
        raise HierarchyError(f"Groups can be renamed at levels 1 to {hierarchy.max_level}, got {level}.")
    labels = {lv: dict(names) for lv, names in (stored.labels if stored is not None else {}).items()}
    text = [str(v) for v in canonical_text(hierarchy.labels[level])]
    if new in text and new != old:
        raise HierarchyError(f"Level {level} already has a group '{new}'; choose another label.")
    # The hierarchy shown is already renamed: map back to the built label before recording the new one.
    original = {shown: built for built, shown in labels.get(level, {}).items()}
    labels.setdefault(level, {})[original.get(old, old)] = new
    if stored is not None and stored.source == "editor" and stored.settings is not None:
        renamed = build_column(stored.settings, loaded.frame[column], labels)
        item = replace(stored, hierarchy=renamed, labels=labels)
    else:
        renamed = _renamed(hierarchy, {level: {old: new}})
        base = stored or ColumnHierarchy(hierarchy, "editor", settings=None)
        item = replace(base, hierarchy=renamed, labels=labels)
    return _state_with(services, state, current.with_column(column, item))


# --- importing ARX files ----------------------------------------------------------------------------------------------


def match_column(filename: str, columns: Sequence[str]) -> str | None:
    """The column an ARX file is for by its name, as the command line's ``--hierarchies`` folder matches them:
    ``<column>.csv`` or ``<anything>_hierarchy_<column>.csv``, the exact case preferred; None when no column or
    several match."""
    stem = filename.rsplit(".", 1)[0] if filename.lower().endswith(".csv") else filename
    for fold in (False, True):

        def norm(text: str, fold: bool = fold) -> str:
            return text.lower() if fold else text

        exact = [c for c in columns if norm(stem) == norm(c)]
        suffixed = [c for c in columns if norm(stem).endswith("_hierarchy_" + norm(c))]
        candidates = exact or suffixed
        if len(candidates) == 1:
            return candidates[0]
        if len(candidates) > 1:
            longest = max(candidates, key=len)  # adult_hierarchy_marital-status: 'marital-status', not 'status'
            if sum(len(c) == len(longest) for c in candidates) == 1:
                return longest
            return None
    return None


def _read_file(name: str, data: bytes) -> Hierarchy:
    """An ARX hierarchy file's bytes, read by the core's reader (its encodings and messages)."""
    if len(data) > MAX_FILE_BYTES:
        raise HierarchyError(f"{name} is {len(data) / 1e6:.1f} MB, over the {MAX_FILE_BYTES / 1e6:.0f} MB limit.")
    with tempfile.TemporaryDirectory(prefix="privdash-hierarchy-") as folder:
        path = Path(folder) / (name if name.lower().endswith(".csv") else name + ".csv")
        path.write_bytes(data)
        return read_arx_hierarchy(path)


@dataclass(frozen=True)
class ImportOutcome:
    """What an import did: the new state, the columns given a hierarchy (with their file) and the errors."""

    state: ViewState
    imported: tuple[tuple[str, str], ...] = ()
    errors: tuple[str, ...] = ()


def import_files(
    services: Services, state: ViewState, files: Sequence[tuple[str, bytes]], column: str | None = None
) -> ImportOutcome:
    """Import ARX hierarchy files for the state's upload: each matched to a column by its name
    (:func:`match_column`) or, for a single file, to ``column``; each checked to parse and to cover every value of
    its column. The files that fit are stored (one new version of the set); each other one gets its message."""
    if not state.dataset:
        raise HierarchyError("No dataset is open.")
    if not files:
        raise HierarchyError("Choose one or more ARX hierarchy files (CSV).")
    if len(files) > MAX_FILES:
        raise HierarchyError(f"Import at most {MAX_FILES} files at once.")
    if column and len(files) > 1:
        raise HierarchyError(
            "Several files are matched to their columns by their names; choose 'match by file name', or import "
            "one file for the chosen column."
        )
    _folder(services, state.dataset)
    loaded = services.dataset(state.dataset)
    current = dataset_hierarchies(services, state)
    imported: list[tuple[str, str]] = []
    errors: list[str] = []
    for raw_name, data in files:
        name = clean_filename(raw_name)
        target = column or match_column(name, loaded.columns)
        if target is None or target not in loaded.columns:
            errors.append(
                f"{name} matches no column of this table (name it '<column>.csv' or '<name>_hierarchy_<column>.csv', "
                "or choose its column)."
            )
            continue
        try:
            hierarchy = _read_file(name, data)
            hierarchy.leaf_codes(loaded.frame[target].rename(target))
        except HierarchyError as exc:
            text = str(exc)
            errors.append(text if text.startswith(name) else f"{name}: {text}")
            continue
        current = current.with_column(target, ColumnHierarchy(hierarchy, "file", file=name))
        imported.append((target, name))
    new_state = _state_with(services, state, current) if imported else state
    return ImportOutcome(new_state, tuple(imported), tuple(errors))


def arx_text(hierarchy: Hierarchy) -> str:
    """The hierarchy as an ARX CSV file's text (``;``-separated, one row per value), by the core's writer."""
    with tempfile.TemporaryDirectory(prefix="privdash-hierarchy-") as folder:
        path = write_arx_hierarchy(hierarchy, Path(folder) / "hierarchy.csv")
        return path.read_text(encoding="utf-8")


# --- the contract -----------------------------------------------------------------------------------------------------


def contract_json(services: Services, loaded: LoadedDataset, state: ViewState) -> str:
    """The data contract of the state, with the dataset's stored hierarchies under ``hierarchies`` (the stored
    form's ``columns``) when it has some."""
    obj = services.contract(loaded, state).to_dict()
    stored = dataset_hierarchies(services, state)
    if stored.columns:
        obj["hierarchies"] = json.loads(set_to_json(stored))["columns"]
    return json.dumps(obj, indent=2, ensure_ascii=False)


def state_with_contract_hierarchies(services: Services, state: ViewState, text: str | None) -> ViewState:
    """The state with the hierarchies of an imported contract stored (the state itself when it has none)."""
    try:
        obj = json.loads(text or "")
    except ValueError:
        return state
    given = obj.get("hierarchies") if isinstance(obj, Mapping) else None
    if not given:
        return state
    if not editable(state.dataset):
        raise HierarchyError(
            "The contract carries hierarchies, which are kept with uploaded tables only; upload the table to use them."
        )
    loaded = services.dataset(str(state.dataset))
    imported = set_from_json({"columns": given}, loaded.frame)
    current = dataset_hierarchies(services, state)
    for name, item in imported.columns.items():
        current = current.with_column(name, item)
    return _state_with(services, state, current)


# --- what the editor shows --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelSummary:
    """One level of a hierarchy over a column's records: the groups that hold records, the smallest group's record
    count, and an example of a value's path."""

    level: int
    groups: int
    smallest: int
    example: str


@dataclass(frozen=True)
class GroupRow:
    """One group at a level: its label, its records, how many distinct values it holds and the first of them."""

    label: str
    records: int
    values: int
    members: str


def _record_codes(hierarchy: Hierarchy, values: pd.Series) -> np.ndarray:
    leaf = hierarchy.codes_for(values, 0, strict=False)
    return leaf[leaf >= 0]


def level_summary(hierarchy: Hierarchy, values: pd.Series) -> list[LevelSummary]:
    """Each level with its number of groups holding records and the smallest group's record count."""
    leaf = _record_codes(hierarchy, values)
    out = []
    for level in range(hierarchy.n_levels):
        counts = np.bincount(hierarchy.codes[level][leaf], minlength=len(hierarchy.labels[level]))
        used = counts[counts > 0]
        first = hierarchy.labels[level][hierarchy.codes[level][leaf[0]]] if len(leaf) else ""
        out.append(LevelSummary(level, len(used), int(used.min()) if len(used) else 0, str(first)))
    return out


def groups_at(hierarchy: Hierarchy, values: pd.Series, level: int, limit: int = 500) -> list[GroupRow]:
    """The groups at ``level`` that hold records, the smallest first (at most ``limit``)."""
    level = hierarchy.check_level(level)
    leaf = _record_codes(hierarchy, values)
    records = np.bincount(hierarchy.codes[level][leaf], minlength=len(hierarchy.labels[level]))
    distinct = np.bincount(hierarchy.codes[level][np.unique(leaf)], minlength=len(hierarchy.labels[level]))
    leaves = np.asarray(canonical_text(hierarchy.leaves), dtype=object)
    rows = []
    for code in np.argsort(records, kind="stable"):
        if records[code] == 0:
            continue
        members = leaves[hierarchy.codes[level] == code]
        shown = ", ".join(str(m) for m in members[:6]) + (f", … ({len(members)} values)" if len(members) > 6 else "")
        rows.append(GroupRow(str(hierarchy.labels[level][code]), int(records[code]), int(distinct[code]), shown))
        if len(rows) >= limit:
            break
    return rows


# --- the editor's form ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EditorForm:
    """The editor's fields for a column: the builder and each builder's settings as the form shows them."""

    builder: str = "intervals"
    widths: str = ""
    low: float | None = None
    high: float | None = None
    bins: str = ""
    ratio: float = 2.0
    date_levels: tuple[str, ...] = ("month", "quarter", "year")
    lengths: str = ""


def _numbers_text(values: Sequence[Any] | None) -> str:
    return ", ".join(f"{float(v):g}" for v in values or ())


def editor_form(services: Services, loaded: LoadedDataset, state: ViewState, column: str) -> EditorForm:
    """The editor's fields for ``column``: the stored settings when the editor made its hierarchy, else the
    default rule of its type (:func:`~privdash.transform.hierarchy.default_rule`)."""
    try:
        stored = dataset_hierarchies(services, state).columns.get(column)
    except (HierarchyError, DatasetNotFound):
        stored = None
    if stored is not None and stored.source == "editor" and stored.settings is not None:
        settings = dict(stored.settings)
    else:
        _check_column(loaded, column)
        kind = state.types.get(column, StatisticalType.NOMINAL)
        try:
            settings = default_rule(loaded.frame[column], kind, state.k)
        except HierarchyError:
            settings = {"builder": "frequency"}
    builder = str(settings.get("builder"))
    if builder not in EDITOR_BUILDERS:
        builder = "groups"
    form = EditorForm(builder=builder)
    if builder == "intervals":
        form = replace(form, widths=_numbers_text(settings.get("widths")), low=settings.get("low"))
        form = replace(form, high=settings.get("high"))
    elif builder == "quantiles":
        form = replace(form, bins=", ".join(str(int(b)) for b in settings.get("bins") or ()))
    elif builder == "frequency":
        form = replace(form, ratio=float(settings.get("ratio", 2.0)))
    elif builder == "dates":
        form = replace(form, date_levels=tuple(settings.get("levels") or form.date_levels))
    elif builder == "prefix":
        form = replace(form, lengths=", ".join(str(int(n)) for n in settings.get("lengths") or ()))
    return form


def _parse_numbers(text: str | None, what: str) -> list[float | int]:
    parts = [p.strip() for p in str(text or "").replace(";", ",").split(",") if p.strip()]
    if not parts:
        raise HierarchyError(f"Give the {what}, separated by commas.")
    out: list[float | int] = []
    for part in parts:
        try:
            number = float(part)
        except ValueError:
            raise HierarchyError(f"'{part[:40]}' is not a number ({what}).") from None
        out.append(int(number) if number.is_integer() else number)
    return out


def settings_from_form(form: EditorForm) -> dict[str, Any]:
    """The rule settings the editor's fields describe (checked by :func:`build_column` when built)."""
    builder = form.builder
    if builder == "intervals":
        settings: dict[str, Any] = {"builder": "intervals", "widths": _parse_numbers(form.widths, "interval widths")}
        for name, value in (("low", form.low), ("high", form.high)):
            if value is not None and value != "":
                settings[name] = value
        return settings
    if builder == "quantiles":
        return {"builder": "quantiles", "bins": _parse_numbers(form.bins, "numbers of intervals per level")}
    if builder == "frequency":
        return {"builder": "frequency", "ratio": form.ratio}
    if builder == "dates":
        return {"builder": "dates", "levels": [v for v in ("month", "quarter", "year") if v in form.date_levels]}
    if builder == "prefix":
        return {"builder": "prefix", "lengths": _parse_numbers(form.lengths, "characters kept per level")}
    raise HierarchyError("Named groups are made with 'Group these values'.")


def group_choices(services: Services, state: ViewState, column: str, level: int) -> tuple[list[str], list[str]]:
    """For the named-groups editor at ``level``: the labels of level ``level - 1`` that can be grouped (at most
    5,000), and the names of the groups already at ``level``."""
    loaded = services.dataset(str(state.dataset))
    try:
        stored = dataset_hierarchies(services, state).columns.get(column)
    except (HierarchyError, DatasetNotFound):
        stored = None
    settings = stored.settings if stored is not None and stored.source == "editor" else None
    levels = list((settings or {}).get("levels") or []) if (settings or {}).get("builder") == "groups" else []
    level = max(1, min(int(level or 1), len(levels) + 1))
    if level == 1 or stored is None:
        leaves = pd.Index(loaded.frame[column].dropna().unique())
        labels = [str(v) for v in canonical_text(leaves)]
    else:
        labels = [str(v) for v in canonical_text(stored.hierarchy.labels[level - 1])]
    names = [str(g["name"]) for g in levels[level - 1]] if level <= len(levels) else []
    return sorted(labels)[:5000], names


@dataclass(frozen=True)
class EditorView:
    """What the editor shows for a column: what the hierarchy is, its levels, and the groups at one level."""

    status: str
    levels: list[LevelSummary]
    level: int
    groups: list[GroupRow]
    stored: bool
    max_level: int


def level_number(value: Any) -> int:
    """A level of a hierarchy as the editor's level choice gives it (text of a whole number); raises
    :class:`HierarchyError` for anything else."""
    try:
        number = int(str(value))
    except ValueError:
        raise HierarchyError(f"Not a level of the hierarchy: {str(value)[:40]!r}.") from None
    if number < 0:
        raise HierarchyError(f"Not a level of the hierarchy: {number}.")
    return number


def editor_view(
    services: Services,
    loaded: LoadedDataset,
    state: ViewState,
    column: str,
    level: int | None = None,
    given: Mapping[str, Hierarchy] | None = None,
) -> EditorView:
    """The hierarchy the Fix page uses for ``column`` with its levels' group sizes, and the groups at ``level``
    (level 1 by default, the top one when it has no level 1)."""
    hierarchy, status, stored = current_hierarchy(services, loaded, state, column, given)
    values = loaded.frame[column]
    chosen = max(0, min(1 if level is None else int(level), hierarchy.max_level))
    return EditorView(
        status,
        level_summary(hierarchy, values),
        chosen,
        groups_at(hierarchy, values, chosen),
        stored is not None,
        hierarchy.max_level,
    )
