"""The dashboard's release report: the report of a page's view (:func:`report_for_state`) and the disk cache where the
finished files wait for their download (:class:`ReportFiles`). Nothing here imports Dash."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privdash.application.fixes import describe_spec
from privdash.application.report.build import build_report
from privdash.application.report.model import AppliedFix, Progress, ReleaseReport, table_fingerprint
from privdash.data.contract import StatisticalType
from privdash.errors import PrivdashError
from privdash.utility.estimates import Estimate

if TYPE_CHECKING:
    from privdash.application.services import Services
    from privdash.application.state import ViewState

__all__ = ["ReportFiles", "report_for_state"]


def report_for_state(
    services: Services,
    state: ViewState,
    progress: Progress | None = None,
    estimates: Sequence[Estimate | str] = (),
    signoff: Mapping[str, str] | None = None,
) -> ReleaseReport:
    """The release report of a dashboard view: its dataset, roles, missing-value policy, targets (l and t only with
    a sensitive attribute) and risk threshold, after the view's fix steps when it has any, with the steward's
    ``estimates`` before and after them. Postcode units get the census populations of the Postcodes page's
    settings when the shared data holds them. ``signoff``: the sign-off fields the steward filled in (the Data
    page's project section), printed in the sign-off block."""
    from privdash.application.fixruns import FixRuns
    from privdash.application.postcodes import ReferenceDataMissing, settings_from_state

    report_progress = progress or (lambda _percent, _text: None)
    if not state.dataset:
        raise PrivdashError("No dataset is open.")
    report_progress(2, "Loading the table ...")
    loaded = services.dataset(state.dataset)
    contract = services.contract(loaded, state)
    contract.validate(loaded.frame)
    # The page's targets (riskview.view_targets): l and t only with a sensitive attribute to judge them on.
    measured = bool(contract.sensitive)
    targets = replace(state.targets, l=state.l if measured else None, t=state.t if measured else None, sensitive=())
    fix = None
    if state.fix:
        report_progress(10, "Applying the fix steps ...")
        run = FixRuns(services).run(state)
        if run.error is not None:
            raise PrivdashError(f"Fix step {(run.failed or 0) + 1} could not be applied: {run.error}")
        fix = AppliedFix(
            description="; ".join(describe_spec(spec) for spec in run.specs) + ".",
            recipe=run.recipe,
            data=run.data,
            kept_rows=run.kept_rows,
            results=run.results,
            hierarchies=dict(run.hierarchies),
            wildcard=run.wildcard,
            contract=run.contract,
        )
    geo, _problem = settings_from_state(state)
    table = None
    has_postcode = any(
        contract[name].statistical_type == StatisticalType.POSTCODE for name in contract.quasi_identifiers
    )
    polygons: dict[str, Any] = {}
    if has_postcode and geo.country == "uk":
        try:
            table = services.postcodes.population_table(geo.source)
        except ReferenceDataMissing:
            table = None
        layers = (("district", services.postcodes.district_layer), ("area", services.postcodes.area_layer))
        for level, layer in layers:
            with contextlib.suppress(ReferenceDataMissing):  # the map is left out without polygons
                polygons[level] = layer().frame
    fingerprint = table_fingerprint(loaded.title, loaded.frame)
    parameters = (
        ("dataset", loaded.title),
        ("targets", targets.describe()),
        ("risk threshold (max_risk)", f"{state.max_risk:g}"),
        ("missing values", state.missing.value),
        ("fix steps", str(len(state.fix))),
        ("made with", "the privdash dashboard"),
    )
    report = build_report(
        loaded.frame,
        contract,
        targets,
        fingerprint,
        missing=state.missing,
        max_risk=state.max_risk,
        fix=fix,
        postcode_population=table,
        postcode_threshold=geo.threshold,
        postcode_polygons=polygons or None,
        parameters=parameters,
        # the assembly's stages after loading and fixing (up to 10%): the bar never goes back
        progress=lambda percent, text: report_progress(12 + percent * 88 // 100, text),
        estimates=estimates,
        # model-based risk fits rows' QI combinations: not defined with a person id (the report says why)
        model_risk=state.model_risk if contract.entity is None else (),
        signoff=signoff,
    )
    if state.model_risk and contract.entity is not None:
        note = (
            "Model-based risk is left out: its log-linear models describe the table of QI combinations of rows, "
            f"while with a person id ('{contract.entity}') a class is a set of combinations per person."
        )
        report = replace(report, left_out=(*report.left_out, note))
    return report


class ReportFiles:
    """Finished reports waiting for their download, in a disk cache that every worker process and background job
    opens (``<cache_dir>/reports``), under a random 128-bit token, for ``ttl`` seconds."""

    def __init__(self, folder: str | os.PathLike[str], *, ttl: float) -> None:
        self.folder = Path(folder)
        self.ttl = ttl

    def _cache(self) -> Any:
        import diskcache

        self.folder.mkdir(parents=True, exist_ok=True)
        return diskcache.Cache(str(self.folder), size_limit=2**30)

    def put(self, files: Mapping[str, tuple[str, bytes]]) -> str:
        """Keep ``{format: (file name, content)}``; returns the token that fetches them."""
        token = secrets.token_urlsafe(16)
        with self._cache() as cache:
            cache.set(token, dict(files), expire=self.ttl)
        return token

    def get(self, token: str, kind: str) -> tuple[str, bytes]:
        """The file name and content of one format of a kept report; ``PrivdashError`` when it has expired."""
        with self._cache() as cache:
            files = cache.get(str(token))
        if not isinstance(files, dict) or kind not in files:
            raise PrivdashError("This report has expired; make it again with the Report button.")
        name, content = files[kind]
        return str(name), bytes(content)
