"""The Fix page's "Add a step" form, built from the technique descriptions (:mod:`privdash.application.techniques`).

Every parameter of a technique of the step list gets a control whose id is :func:`control_id` (``fix-<technique>-
<parameter>``, underscores as hyphens: ``fix-record-suppression-max-suppression``), whose label, bounds, default
and help come from the parameter. Three kinds of parameter are drawn here instead of from their constraint alone:

* ``form="view"``: a checkbox that takes the view's target (the search's l, t, highest risk and release rules; the
  risk rules of record suppression), labelled with the target's value (:data:`VIEW_CONTROLS`);
* ``form="rule"``: the hierarchy of ``generalize`` (a builder, the rule's text and a hint of its levels);
* ``form="none"``: not on the form (the solution picked in the search's table).

:func:`spec_from_controls` reads the controls back into a spec and checks it (:func:`privdash.application.fixes.
check_spec`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import dash_mantine_components as dmc
import pandas as pd
from dash import html

from dashboard.ui.components import fmt_number, fmt_share
from privdash.application.fixes import BUILDERS, FixError, check_spec, key_status, rule_from_text, rule_text
from privdash.application.riskview import release_rules_text
from privdash.application.services import LoadedDataset
from privdash.application.state import ViewState
from privdash.application.techniques import STEPS, Param, Technique, bounds, form_default, technique
from privdash.data.contract import ColumnRole, StatisticalType
from privdash.transform.hierarchy import default_rule
from privdash.transform.suppression import SUPPRESSION_RISK_TARGETS

__all__ = [
    "CONTROLS",
    "RULE_CONTROLS",
    "VIEW_CONTROLS",
    "control_id",
    "release_checkbox",
    "rule_help",
    "shown",
    "spec_from_controls",
    "suppression_checkbox",
    "suppression_rules",
    "technique_panels",
]


def control_id(name: str, param: str) -> str:
    """The id of the control of parameter ``param`` of technique ``name``."""
    return f"fix-{name}-{param}".replace("_", "-")


#: The controls of the hierarchy rule of ``generalize`` (its ``rule`` parameter): the builder and the rule's text.
RULE_CONTROLS = {"builder": control_id("generalize", "builder"), "text": control_id("generalize", "rule")}
#: The id of the hint under the generalization's controls (the levels the rule makes).
RULE_HINT = control_id("generalize", "hint")


def suppression_rules(state: ViewState) -> dict[str, float]:
    """The view's release rules record suppression can meet (global, household and average risk)."""
    return {name: value for name, value in state.release.items() if name in SUPPRESSION_RISK_TARGETS}


def suppression_checkbox(state: ViewState) -> dict[str, Any]:
    """The label, state and availability of record suppression's "risk rules" checkbox (as the search's)."""
    rules = suppression_rules(state)
    if not rules:
        return {
            "label": f"the risk rules ({', '.join(SUPPRESSION_RISK_TARGETS)}; none set under Targets)",
            "checked": False,
            "disabled": True,
        }
    return {"label": f"also the risk rules: {release_rules_text(rules)}", "checked": True, "disabled": False}


def release_checkbox(state: ViewState) -> dict[str, Any]:
    """The label, state and availability of the search's "release rules" checkbox: ticked when the view has release
    rules (those of the Targets input), unavailable without."""
    if not state.release:
        return {"label": "the release rules (none set: write them under Targets)", "checked": False, "disabled": True}
    return {"label": f"the release rules: {release_rules_text(state.release)}", "checked": True, "disabled": False}


def _sensitive_checkbox(label: str) -> Callable[[ViewState], dict[str, Any]]:
    """The checkbox of a target on the sensitive attributes (l, t): ticked when the view has some, else unavailable."""

    def checkbox(state: ViewState) -> dict[str, Any]:
        text = label.format(state=state, t=fmt_number(state.t))
        return {"label": text, "checked": bool(state.sensitive), "disabled": not state.sensitive}

    return checkbox


#: The parameters a checkbox takes from the view: (technique, parameter) -> (the checkbox's label and state, the
#: value the spec gets when it is ticked).
VIEW_CONTROLS: dict[tuple[str, str], tuple[Callable[[ViewState], dict[str, Any]], Callable[[ViewState], Any]]] = {
    ("record_suppression", "release"): (suppression_checkbox, lambda state: suppression_rules(state) or None),
    ("search", "l"): (_sensitive_checkbox("l-diversity ≥ {state.l} on the sensitive attributes"), lambda s: s.l),
    ("search", "t"): (_sensitive_checkbox("t-closeness ≤ {t}"), lambda state: state.t),
    ("search", "max_risk"): (
        lambda state: {"label": f"highest risk ≤ {fmt_share(state.max_risk, 0)}", "checked": True},
        lambda state: state.max_risk or None,  # 0: no risk target
    ),
    ("search", "release"): (release_checkbox, lambda state: dict(state.release) or None),
}


def _controls() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in STEPS:
        for param in technique(name).params:
            if param.form == "rule":
                out.update({RULE_CONTROLS["builder"]: "value", RULE_CONTROLS["text"]: "value"})
            elif param.widget in ("view", "checkbox"):
                out[control_id(name, param.name)] = "checked"
            elif param.form == "input":
                out[control_id(name, param.name)] = "value"
    return out


#: Control id -> property, read when a step is added (see :func:`spec_from_controls`).
CONTROLS: dict[str, str] = _controls()


# --- controls -> spec ----------------------------------------------------------------------------------------------


def _lowered(label: str) -> str:
    """``The level`` -> ``the level``; ``k`` and ``QI`` stay as they are."""
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


def form_label(param: Param) -> str:
    """The label of a parameter's control: ``The level`` -> ``Level``; a percentage says so."""
    label = param.label.removeprefix("The ")
    label = label[:1].upper() + label[1:]
    return f"{label} (% of records)" if param.percent else label


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def spec_from_controls(kind: str | None, values: Mapping[str, Any], state: ViewState) -> dict[str, Any]:
    """The fix spec the controls of technique ``kind`` describe (validated); raises :class:`FixError`."""
    if kind not in STEPS:
        raise FixError("Choose a technique.")
    item = technique(kind)
    spec: dict[str, Any] = {"kind": item.name}
    for param in item.params:
        if param.form == "none":
            continue
        if param.form == "rule":
            builder = str(values.get(RULE_CONTROLS["builder"]) or "")
            spec[param.name] = rule_from_text(builder, values.get(RULE_CONTROLS["text"]))
            continue
        value = values.get(control_id(item.name, param.name))
        if param.form == "view":
            taken = VIEW_CONTROLS[(item.name, param.name)][1](state) if value else None
            if taken is not None:
                spec[param.name] = taken
            continue
        if param.widget == "checkbox":
            spec[param.name] = bool(value)
        elif param.widget == "columns":
            spec[param.name] = list(value or [])
        elif _blank(value):
            if param.required and param.widget == "column":
                raise FixError(f"Choose the {param.label.lower()}.")
            if param.required:
                raise FixError(f"Give {_lowered(param.label)}.")
        elif param.percent and isinstance(value, int | float) and not isinstance(value, bool):
            spec[param.name] = value / 100
        else:
            spec[param.name] = value
    return check_spec(spec)


# --- the controls --------------------------------------------------------------------------------------------------


def _options(names: Sequence[str]) -> list[dict[str, str]]:
    return [{"value": n, "label": n} for n in names]


def shown(visible: bool) -> dict[str, str]:
    return {} if visible else {"display": "none"}


def rule_help(builder: str) -> str:
    return {
        "intervals": "Widths, finest first, each a multiple of the previous, then optional top and bottom codes "
        "(e.g. 5, 10, 20, >=80, <20)",
        "quantiles": "Intervals per level, finest first (e.g. 8, 4, 2)",
        "dates": "Levels: month, quarter, year",
        "postcodes": "Levels: sector, district, area",
        "frequency": "Factor by which each level divides the number of groups; the rarest are merged first (e.g. 2)",
        "prefix": "Characters kept per level, longest first (e.g. 3, 2, 1)",
        "masking": "Levels of masking (last characters hidden per level)",
        "rare": "Values seen fewer times than this become 'Other'",
    }.get(builder, "")


class _Form:
    """What the controls of one dataset and view offer: the columns of each role, the first column to generalize and
    its rule."""

    def __init__(self, loaded: LoadedDataset, state: ViewState, stored: Collection[str]) -> None:
        self.state = state
        self.columns = list(loaded.columns)
        self.qis = [c for c in self.columns if state.roles.get(c) == ColumnRole.QUASI_IDENTIFIER]
        self.identifiers = [c for c in self.columns if state.roles.get(c) == ColumnRole.IDENTIFIER]
        self.numeric = [c for c in self.columns if pd.api.types.is_numeric_dtype(loaded.frame[c])]
        self.gen_column = self.qis[0] if self.qis else (self.columns[0] if self.columns else None)
        rule: dict[str, Any] = {"builder": "intervals", "widths": [5]}
        if self.gen_column:
            kind = state.types.get(self.gen_column, StatisticalType.NOMINAL)
            rule = default_rule(loaded.frame[self.gen_column], kind, state.k)
        if self.gen_column in stored:
            rule = {"builder": "dataset"}
        self.rule = rule

    def column_choices(self, param: Param) -> tuple[list[str], Any]:
        """The columns a column parameter offers, and the ones chosen at first."""
        if param.widget == "column":
            if param.numeric:
                return self.numeric, self.numeric[0] if self.numeric else None
            return self.qis + [c for c in self.columns if c not in self.qis], self.gen_column
        if param.role == ColumnRole.QUASI_IDENTIFIER.value:
            return self.qis, []
        return self.columns, self.identifiers

    def control(self, item: Technique, param: Param) -> list[Any]:
        """The control(s) of one parameter."""
        cid = control_id(item.name, param.name)
        widget = param.widget
        if widget == "rule":
            return [
                dmc.Select(
                    id=RULE_CONTROLS["builder"],
                    label=form_label(param),
                    data=[{"value": b, "label": t} for b, t in BUILDERS.items()],
                    value=self.rule["builder"],
                    allowDeselect=False,
                ),
                dmc.TextInput(
                    id=RULE_CONTROLS["text"],
                    label="Rule",
                    value=rule_text(self.rule),
                    description=rule_help(str(self.rule["builder"])),
                ),
            ]
        if widget == "view":
            return [dmc.Checkbox(id=cid, **VIEW_CONTROLS[(item.name, param.name)][0](self.state))]
        if widget == "checkbox":
            return [dmc.Checkbox(id=cid, label=form_label(param), checked=bool(param.default))]
        if widget == "column":
            options, value = self.column_choices(param)
            return [dmc.Select(id=cid, label=form_label(param), data=_options(options), value=value, searchable=True)]
        if widget == "columns":
            options, value = self.column_choices(param)
            return [
                dmc.MultiSelect(
                    id=cid,
                    label=form_label(param),
                    data=_options(options),
                    value=value,
                    clearable=param.min_items == 0,
                )
            ]
        if widget == "choice":
            if param.choices:
                labels = dict(param.choices)
                radios = [dmc.Radio(label=labels.get(o, o), value=o) for o in param.options]
                return [
                    dmc.RadioGroup(
                        dmc.Stack(radios, gap=6, mt=4),
                        id=cid,
                        label=form_label(param),
                        description=param.help,
                        value=param.default,
                        size="sm",
                    )
                ]
            return [
                dmc.Select(
                    id=cid,
                    label=form_label(param),
                    data=list(param.options),
                    value=param.default,
                    allowDeselect=False,
                    w=220,
                )
            ]
        if widget == "number":
            limits = bounds(param)
            value = form_default(param)
            if param.name == "k":  # the view's k, within the technique's bounds
                value = max(self.state.k, int(limits.min or 1))
            label = form_label(param)
            number: dict[str, Any] = {"min": limits.min, "step": limits.step, "w": 110 if len(label) <= 12 else 220}
            if limits.max is not None:
                number["max"] = limits.max
            return [dmc.NumberInput(id=cid, label=label, value=value, **number)]
        return [dmc.TextInput(id=cid, label=form_label(param), value=param.default or "")]


def technique_panels(
    loaded: LoadedDataset,
    state: ViewState,
    chosen: str,
    pseudonym_key: str | None = None,
    stored: Collection[str] = (),
) -> list[Any]:
    """One block of inputs per technique of the step list, built from its parameters; only the ``chosen``
    technique's block is shown. A column in ``stored`` (its hierarchy is kept with the upload) is generalized with
    that hierarchy by default."""
    form = _Form(loaded, state, stored)
    panels = []
    for name in STEPS:
        item = technique(name)
        children: list[Any] = []
        for param in item.params:
            if param.form != "none":
                children.extend(form.control(item, param))
        if name == "generalize":
            children.append(dmc.Text("", id=RULE_HINT, size="xs", c="dimmed"))
        if name == "pseudonymize":
            key_ok, key_text = key_status(pseudonym_key)
            children.append(dmc.Text(key_text, size="xs", c="green.8" if key_ok else "red.8", id="fix-key-status"))
        children.append(dmc.Text(item.help, size="xs", c="dimmed"))
        panels.append(
            html.Div(dmc.Stack(children, gap="xs"), id={"type": "fix-panel", "kind": name}, style=shown(name == chosen))
        )
    return panels
