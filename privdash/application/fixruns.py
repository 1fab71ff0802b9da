"""The Fix page's runs: the view state's step list applied to its dataset, kept so that callbacks share them.

A run depends on the dataset, the data contract the state describes, the missing-value policy and the step list;
its *key* is the sha256 of those four as JSON (:meth:`FixRuns.key`). Two caches hold runs:

* memory: every prefix of a list is kept in the services' :class:`~privdash.application.cache.BoundedCache` under
  ``("fix-run", key)``, so adding or undoing a step re-applies one step at most;
* disk: a run of a list with a slow step (:data:`~privdash.application.fixes.SLOW_KINDS`) is also written to a
  diskcache folder, ``<cache_dir>/fix-runs``, for ``store_ttl`` seconds. The web workers and the background job that
  previews such a list share that folder, so the page renders the job's result without computing it again
  (:meth:`FixRuns.ready`).

A list that pseudonymizes also depends on the key of the settings: its key adds the key's fingerprint (never the
key, which is handed to the step and kept nowhere). The diagnosis of a fixed table is kept under
``("fix-diagnosis", key, policy, max_risk, k)``. Nothing here imports Dash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import diskcache
import pandas as pd

from privdash.application import hierarchies as dataset_hierarchies
from privdash.application.cache import DISK_LIMIT, disk_cache
from privdash.application.fixes import (
    FixError,
    FixRun,
    build_hierarchy,
    describe_spec,
    extend_run,
    is_slow,
    rule_from_text,
    start_run,
)
from privdash.application.services import LoadedDataset, Services, default_k_values
from privdash.application.state import StateError, ViewState
from privdash.data.contract import DataContract, StatisticalType
from privdash.data.demo import demo_datasets
from privdash.errors import PrivdashError
from privdash.measure.classes import MissingPolicy
from privdash.measure.diagnose import Diagnosis, diagnose
from privdash.transform.hierarchy import Hierarchy, default_rule
from privdash.transform.identifiers import key_fingerprint

__all__ = ["DISK_LIMIT", "FixRuns"]


class FixRuns:
    """The step lists of view states applied to their datasets, cached in memory and (slow lists) on disk."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.folder = Path(services.settings.cache_dir) / "fix-runs"
        self.ttl = services.settings.store_ttl

    @property
    def disk(self) -> diskcache.Cache:
        return disk_cache(self.folder)

    # --- keys ------------------------------------------------------------------------------------------------------

    def key(self, dataset_id: str, contract_json: str, missing: str, specs: Sequence[Mapping[str, Any]]) -> str:
        """The sha256 (hex) of what a run depends on: dataset id, contract JSON, missing-value policy, step list,
        and, for a list that pseudonymizes, the fingerprint of the settings' key (never the key)."""
        parts: list[Any] = [dataset_id, contract_json, missing, list(specs)]
        if any(isinstance(spec, Mapping) and spec.get("kind") == "pseudonymize" for spec in specs):
            parts.append(self._key_fingerprint())
        text = json.dumps(parts, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def _key_fingerprint(self) -> str | None:
        key = self.services.settings.pseudonym_key
        if not key:
            return None
        try:
            return key_fingerprint(key)
        except PrivdashError:
            return "unusable"

    def _inputs(self, state: ViewState) -> tuple[LoadedDataset, DataContract, str]:
        if not state.dataset:
            raise FixError("No dataset is open.")
        loaded = self.services.dataset(state.dataset)
        loaded.require_rows("Previewing fixes")
        contract = self.services.contract(loaded, state)
        return loaded, contract, contract.to_json(indent=None)

    def state_key(self, state: ViewState) -> str:
        """The key of the state's run (raises ``PrivdashError`` when the dataset or its contract is not usable)."""
        loaded, _contract, contract_json = self._inputs(state)
        return self.key(_dataset_key(loaded, state), contract_json, state.missing.value, state.fix)

    # --- runs ------------------------------------------------------------------------------------------------------

    def run(self, state: ViewState, progress: Callable[[int, str], None] | None = None) -> FixRun:
        """The state's step list applied to its dataset; ``progress(index, description)`` is called before each
        step that is actually computed. Raises ``PrivdashError`` when the dataset or its contract is not usable."""
        loaded, contract, contract_json = self._inputs(state)
        contract.validate(loaded.frame)
        cache = self.services.cache

        def prefix(n: int) -> FixRun:
            specs = state.fix[:n]
            key = self.key(_dataset_key(loaded, state), contract_json, state.missing.value, specs)
            return cache.get_or_build(("fix-run", key), lambda: build(n, specs, key))

        def build(n: int, specs: Sequence[Mapping[str, Any]], key: str) -> FixRun:
            if n == 0:
                return start_run(loaded.frame, contract, state.missing, self.reference_hierarchies(loaded, state))
            slow = is_slow(specs)
            stored = self.disk.get(key) if slow else None
            if isinstance(stored, FixRun):
                return stored
            previous = prefix(n - 1)
            if progress is not None and previous.error is None:
                progress(n - 1, describe_spec(specs[-1]))
            run = extend_run(previous, specs[-1], n - 1, key=self.services.settings.pseudonym_key)
            if slow:
                self.disk.set(key, run, expire=self.ttl)
            return run

        return prefix(len(state.fix))

    def reference_hierarchies(self, loaded: LoadedDataset, state: ViewState | None = None) -> Mapping[str, Hierarchy]:
        """The hierarchies that come with a built-in dataset (ARX's for Adult, see
        :func:`~privdash.data.demo.demo_datasets`), kept in the cache, and those the state's upload keeps
        (imported or edited on the Data page, :mod:`privdash.application.hierarchies`)."""
        if not loaded.is_demo:
            return dataset_hierarchies.reference_hierarchies(self.services, state)
        demo = demo_datasets(self.services.settings.data_dir).get(loaded.id.split(":", 1)[1])
        if demo is None or demo.hierarchies is None:
            return {}
        load = demo.hierarchies
        given: Mapping[str, Hierarchy] = self.services.cache.get_or_build(("demo-hierarchies", loaded.id), load)
        return given

    def ready(self, state: ViewState) -> bool:
        """True when the state's run can be shown at once: its list has no slow step, or its run is on disk (else
        a background job computes it). A state whose dataset is not usable is ready: its error shows at once."""
        if not is_slow(state.fix) or not state.dataset:
            return True
        try:
            key = self.state_key(state)
        except PrivdashError:
            return True
        return key in self.disk

    def fixed_diagnosis(self, run: FixRun, state: ViewState) -> Diagnosis:
        """The core's diagnosis of the state's fixed table ``run.data`` (wildcard classes after cell suppression);
        the dataset's own diagnosis when the list is empty."""
        if not run.specs:
            return self.services.diagnosis(state)
        policy = MissingPolicy.WILDCARD if run.wildcard else state.missing

        def build() -> Diagnosis:
            return diagnose(
                run.data,
                contract=run.contract,
                missing=policy,
                max_risk=state.max_risk,
                k_values=default_k_values(state.k),
            )

        key = ("fix-diagnosis", self.state_key(state), policy.value, state.max_risk, state.k)
        return self.services.cache.get_or_build(key, build)

    # --- what the controls need ------------------------------------------------------------------------------------

    def append(self, state: ViewState, spec: Mapping[str, Any]) -> tuple[ViewState, str | None]:
        """The state with ``spec`` appended, or the unchanged state and why not.

        A quick step is applied first (through the cache, so the preview reuses it) and refused when the core
        refuses it; a slow step (microaggregation, search) is only validated here: the background preview applies it.
        """
        try:
            new_state = state.updated(fix=(*state.fix, spec))
        except StateError as exc:
            return state, str(exc)
        if is_slow(new_state.fix):
            return new_state, None
        try:
            run = self.run(new_state)
        except PrivdashError as exc:
            return state, str(exc)
        if run.error is not None:
            return state, run.error
        return new_state, None

    def table(self, state: ViewState) -> pd.DataFrame:
        """The table the next step is applied to: the fixed table when it is at hand, else (a slow list not computed
        yet) the dataset's own. Raises ``PrivdashError`` when the dataset or its contract is not usable."""
        if not state.dataset:
            raise FixError("No dataset is open.")
        if self.ready(state):
            return self.run(state).data
        return self.services.dataset(state.dataset).frame

    def suggested_rule(self, state: ViewState, column: str) -> dict[str, Any]:
        """Rule settings for generalizing ``column``: the default rule of its declared type
        (:func:`~privdash.transform.hierarchy.default_rule`) over its values in the current table, or in the
        dataset when the current table is not at hand or lacks the column. A numerical column that now holds
        text (interval labels) gets the rule of a nominal one."""
        try:
            values = self.table(state)[column]
        except (PrivdashError, KeyError):
            frame = self.services.dataset(str(state.dataset)).frame
            if column not in frame.columns:
                raise FixError(f"The dataset has no column {str(column)[:120]!r}.") from None
            values = frame[column]
        if column in dataset_hierarchies.reference_hierarchies(self.services, state):
            return {"builder": "dataset"}  # the upload keeps a hierarchy of the column (Data page)
        return default_rule(values, state.types.get(column, StatisticalType.NOMINAL), state.k)

    def hierarchy_hint(
        self, state: ViewState, column: str | None, builder: str | None, text: str | None, level: Any
    ) -> str:
        """The levels the rule makes for ``column`` of the current table, shown on one value, or why the rule does
        not fit; a level above the top is pointed out."""
        if not column or not builder or not state.dataset:
            return ""
        try:
            rule = rule_from_text(builder, text)
            frame = self.table(state)
            if column not in frame.columns:
                return f"'{column}' is not in the fixed table."
            if rule["builder"] == "dataset":
                given = self.reference_hierarchies(self.services.dataset(state.dataset), state).get(column)
                if given is None:
                    return f"The dataset has no hierarchy of '{column}': import or edit one on the Data page."
                hierarchy = given
            else:
                hierarchy = build_hierarchy(rule, frame[column])
        except (PrivdashError, StateError) as exc:
            return str(exc)
        example = hierarchy.matrix()[len(hierarchy.leaves) // 2]
        hint = f"Levels 0–{hierarchy.max_level}: {' → '.join(str(v) for v in example)}."
        if isinstance(level, int | float) and level > hierarchy.max_level:
            hint += f" Level {level:g} is above the top level {hierarchy.max_level}."
        return hint


def _dataset_key(loaded: LoadedDataset, state: ViewState) -> str:
    """The dataset part of a run's key: its id, and the id of the hierarchies the state names (a run generalizes
    with them)."""
    return f"{loaded.id}#{state.hierarchies}" if state.hierarchies else loaded.id
