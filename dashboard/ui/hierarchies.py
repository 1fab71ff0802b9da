"""The Data page's hierarchy editor: import ARX hierarchy files for an upload and build each quasi-identifier's levels
(intervals, categories in named groups, dates, code prefixes), with the group sizes of every level.

Component builders only (no callbacks: the Data page's callbacks call :mod:`privdash.application.hierarchies` and
these builders). Every control has a visible label or an ``aria-label``; the tables have captions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dash_mantine_components as dmc
from dash import dcc, html

from dashboard.ui.components import card, fmt_count
from privdash.application.hierarchies import EDITOR_BUILDERS, EditorForm, EditorView, GroupRow, LevelSummary

__all__ = [
    "IDS",
    "MATCH_BY_NAME",
    "column_options",
    "editor_card",
    "groups_table",
    "import_message",
    "levels_table",
    "panel_styles",
    "target_options",
    "view_parts",
]

#: The builders whose settings are fields of the form (named groups have their own controls).
FORM_BUILDERS = ("intervals", "quantiles", "frequency", "dates", "prefix")
#: Ids of the editor's controls, by what they are.
IDS = {
    "column": "hier-column",
    "status": "hier-status",
    "upload": "hier-upload",
    "target": "hier-target",
    "message": "hier-message",
    "builder": "hier-builder",
    "apply": "hier-apply",
    "reset": "hier-reset",
    "levels": "hier-levels",
    "level": "hier-level",
    "groups": "hier-groups",
    "download": "hier-download",
    "download-data": "hier-download-data",
}
MATCH_BY_NAME = "__by-name__"


def _panel(builder: str, children: list[Any], shown: bool) -> Any:
    return html.Div(
        dmc.Stack(children, gap="xs"),
        id={"type": "hier-panel", "builder": builder},
        style=None if shown else {"display": "none"},
    )


def column_options(columns: Sequence[str], qis: Sequence[str]) -> list[dict[str, str]]:
    """The editor's columns, the quasi-identifiers first (marked QI)."""
    ordered = list(qis) + [c for c in columns if c not in qis]
    return [{"value": c, "label": f"{c} (QI)" if c in qis else c} for c in ordered]


def target_options(columns: Sequence[str], qis: Sequence[str]) -> list[dict[str, str]]:
    """Where imported files go: each file's column by its name, or one chosen column."""
    by_name = {"value": MATCH_BY_NAME, "label": "Each file's column, by file name"}
    return [by_name] + [{"value": c, "label": c} for c in list(qis) + [c for c in columns if c not in qis]]


def panel_styles(builder: str | None, ids: Sequence[dict[str, str]]) -> list[dict[str, str] | None]:
    """The style of each builder's panel: only the chosen one shown."""
    return [None if item["builder"] == builder else {"display": "none"} for item in ids]


def editor_card(columns: Sequence[str], qis: Sequence[str], editable: bool, form: EditorForm | None) -> Any:
    """The editor: which column, the import of ARX files, the builder's settings, and the levels with their group
    sizes (filled by the page's callbacks)."""
    options = column_options(columns, qis)
    first = options[0]["value"] if options else None
    form = form or EditorForm()
    chooser = dmc.Group(
        [
            dmc.Select(
                id=IDS["column"],
                label="Column",
                data=options,
                value=first,
                searchable=True,
                allowDeselect=False,
                w=260,
            ),
            dmc.Text("", id=IDS["status"], size="sm", style={"flex": 1, "minWidth": "240px"}),
        ],
        align="flex-end",
        gap="md",
    )
    importer = dmc.Group(
        [
            dmc.Select(
                id=IDS["target"],
                label="Import for",
                data=target_options(columns, qis),
                value=MATCH_BY_NAME,
                allowDeselect=False,
                w=260,
                disabled=not editable,
            ),
            dcc.Upload(
                dmc.Button("Import ARX hierarchy files", variant="light", size="sm", disabled=not editable),
                id=IDS["upload"],
                accept=".csv,.txt",
                multiple=True,
                disabled=not editable,
            ),
        ],
        align="flex-end",
        gap="sm",
    )
    number = {"size": "sm", "w": 210, "disabled": not editable}
    builder_select = dmc.Select(
        id=IDS["builder"],
        label="Build levels with",
        data=[{"value": b, "label": t} for b, t in EDITOR_BUILDERS.items()],
        value=form.builder,
        allowDeselect=False,
        w=260,
        disabled=not editable,
    )
    panels = [
        _panel(
            "intervals",
            [
                dmc.TextInput(
                    id="hier-widths",
                    debounce=True,
                    label="Widths, finest level first",
                    description="Each a multiple of the one before (e.g. 5, 10, 20)",
                    value=form.widths,
                    size="sm",
                    disabled=not editable,
                ),
                dmc.Group(
                    [
                        dmc.NumberInput(id="hier-low", label="Bottom code (values below it)", value=form.low, **number),
                        dmc.NumberInput(id="hier-high", label="Top code (values from it)", value=form.high, **number),
                    ],
                    gap="sm",
                ),
            ],
            form.builder == "intervals",
        ),
        _panel(
            "quantiles",
            [
                dmc.TextInput(
                    id="hier-bins",
                    debounce=True,
                    label="Intervals per level, finest first",
                    description="Each level fewer (e.g. 16, 8, 4)",
                    value=form.bins,
                    size="sm",
                    disabled=not editable,
                )
            ],
            form.builder == "quantiles",
        ),
        _panel(
            "frequency",
            [
                dmc.NumberInput(
                    id="hier-ratio",
                    label="Groups divided by, per level",
                    description="The rarest categories are merged first",
                    value=form.ratio,
                    min=1.1,
                    step=0.5,
                    decimalScale=2,
                    **number,
                )
            ],
            form.builder == "frequency",
        ),
        _panel(
            "dates",
            [
                dmc.CheckboxGroup(
                    dmc.Group([dmc.Checkbox(label=v.capitalize(), value=v) for v in ("month", "quarter", "year")]),
                    id="hier-date-levels",
                    label="Levels",
                    value=list(form.date_levels),
                )
            ],
            form.builder == "dates",
        ),
        _panel(
            "prefix",
            [
                dmc.TextInput(
                    id="hier-lengths",
                    debounce=True,
                    label="Characters kept per level, longest first",
                    description="e.g. 3, 2, 1 (A011 → A01* → A0* → A*)",
                    value=form.lengths,
                    size="sm",
                    disabled=not editable,
                )
            ],
            form.builder == "prefix",
        ),
        _panel(
            "groups",
            [
                dmc.Text(
                    "Select values, name the group, and group them; values in no group keep their label. Level 2 "
                    "groups the labels of level 1, and so on.",
                    size="xs",
                    c="dimmed",
                ),
                dmc.MultiSelect(
                    id="hier-group-members",
                    label="Values to group",
                    description="Type to search; arrow keys and Enter pick a value",
                    data=[],
                    value=[],
                    searchable=True,
                    clearable=True,
                    hidePickedOptions=True,
                    size="sm",
                ),
                dmc.Group(
                    [
                        dmc.NumberInput(
                            id="hier-group-level", label="Level", value=1, min=1, max=10, step=1, w=90, size="sm"
                        ),
                        dmc.TextInput(id="hier-group-name", label="Group name", size="sm", w=200, debounce=True),
                        dmc.Button("Group these values", id="hier-group-add", size="sm", variant="light"),
                    ],
                    align="flex-end",
                    gap="sm",
                ),
                dmc.Group(
                    [
                        dmc.Select(
                            id="hier-ungroup-name",
                            label="Group at this level",
                            data=[],
                            size="sm",
                            w=220,
                            placeholder="no group yet",
                        ),
                        dmc.Button("Ungroup", id="hier-ungroup", size="sm", variant="subtle", color="gray"),
                    ],
                    align="flex-end",
                    gap="sm",
                ),
            ],
            form.builder == "groups",
        ),
    ]
    actions = dmc.Group(
        [
            dmc.Button("Build levels", id=IDS["apply"], size="sm", disabled=not editable),
            dmc.Button(
                "Use the default", id=IDS["reset"], size="sm", variant="subtle", color="gray", disabled=not editable
            ),
            dmc.Button("Download as ARX file", id=IDS["download"], size="sm", variant="subtle"),
            dcc.Download(id=IDS["download-data"]),
        ],
        gap="xs",
    )
    note = (
        []
        if editable
        else [
            dmc.Text(
                "Built-in tables keep the hierarchies they come with (ARX's for Adult); upload a table to import or "
                "edit its hierarchies.",
                size="sm",
                c="dimmed",
                id="hier-readonly",
            )
        ]
    )
    rename = dmc.Group(
        [
            dmc.Select(
                id="hier-rename-from",
                label="Rename the group",
                data=[],
                size="sm",
                w=220,
                searchable=True,
                placeholder="a group at this level",
            ),
            dmc.TextInput(
                id="hier-rename-to", label="New label", size="sm", w=200, disabled=not editable, debounce=True
            ),
            dmc.Button("Rename", id="hier-rename", size="sm", variant="light", disabled=not editable),
        ],
        align="flex-end",
        gap="sm",
    )
    left = dmc.Stack(
        [
            dmc.Title("Import", order=3, fz="sm", fw=600),
            importer,
            dmc.Title("Edit", order=3, fz="sm", fw=600, mt="xs"),
            builder_select,
            *panels,
            actions,
        ],
        gap="xs",
    )
    right = dmc.Stack(
        [
            dmc.Title("Levels", order=3, fz="sm", fw=600),
            html.Div(id=IDS["levels"]),
            dmc.Select(
                id=IDS["level"],
                label="Groups at level",
                data=[],
                value=None,
                allowDeselect=False,
                w=160,
                size="sm",
            ),
            html.Div(id=IDS["groups"]),
            rename,
        ],
        gap="xs",
    )
    return card(
        "Hierarchies",
        *note,
        chooser,
        html.Div(id=IDS["message"], style={"marginTop": "8px"}),
        dmc.Grid(
            [dmc.GridCol(left, span={"base": 12, "md": 5}), dmc.GridCol(right, span={"base": 12, "md": 7})],
            gutter="lg",
            mt="sm",
        ),
        description=(
            "How the Fix page generalizes each quasi-identifier. Import ARX hierarchy files or build the levels "
            "here; they are kept with the upload on the server, and a link names them by id only."
        ),
        id="hier-card",
    )


def levels_table(levels: Sequence[LevelSummary]) -> Any:
    """Each level: its number of groups and the smallest group's records (level 0 is the values themselves)."""
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("Level"),
                dmc.TableTh("Groups", ta="right"),
                dmc.TableTh("Smallest group (records)", ta="right"),
                dmc.TableTh("Example"),
            ]
        )
    )
    rows = [
        dmc.TableTr(
            [
                dmc.TableTd("values" if item.level == 0 else str(item.level)),
                dmc.TableTd(fmt_count(item.groups), ta="right"),
                dmc.TableTd(fmt_count(item.smallest), ta="right"),
                dmc.TableTd(dmc.Text(item.example, size="sm", lineClamp=1, maw=260)),
            ],
            **{"data-level": str(item.level)},
        )
        for item in levels
    ]
    return dmc.Table(
        [dmc.TableCaption("Distinct groups and the smallest group's records, per level"), head, dmc.TableTbody(rows)],
        id="hier-levels-table",
        captionSide="top",
        maw=760,
        verticalSpacing=4,
        fz="sm",
    )


def groups_table(groups: Sequence[GroupRow], level: int) -> Any:
    """The groups at a level, the smallest first."""
    head = dmc.TableThead(
        dmc.TableTr(
            [
                dmc.TableTh("Group"),
                dmc.TableTh("Records", ta="right"),
                dmc.TableTh("Values", ta="right"),
                dmc.TableTh("Holds"),
            ]
        )
    )
    rows = [
        dmc.TableTr(
            [
                dmc.TableTd(row.label),
                dmc.TableTd(fmt_count(row.records), ta="right"),
                dmc.TableTd(fmt_count(row.values), ta="right"),
                dmc.TableTd(dmc.Text(row.members, size="xs", c="dimmed", lineClamp=2)),
            ]
        )
        for row in groups
    ]
    table = dmc.Table(
        [dmc.TableCaption(f"Groups at level {level}, the smallest first"), head, dmc.TableTbody(rows)],
        id="hier-groups-table",
        captionSide="top",
        maw=760,
        verticalSpacing=4,
        fz="sm",
    )
    # A scrolled region is one Tab stop with a name, so that keyboard users can scroll it (axe's
    # scrollable-region-focusable).
    named: dict[str, Any] = {"aria-label": f"Groups at level {level}"}
    return html.Div(
        table,
        className="hier-groups-scroll",
        tabIndex=0,
        role="region",
        style={"maxHeight": "320px", "overflowY": "auto"},
        **named,
    )


def view_parts(view: EditorView) -> tuple[Any, Any, list[dict[str, str]], str, list[str]]:
    """The levels table, the groups table, the level choices, the chosen level and the group labels (to rename)."""
    choices = [{"value": str(level), "label": str(level)} for level in range(1, view.max_level + 1)] or [
        {"value": "0", "label": "0"}
    ]
    return (
        levels_table(view.levels),
        groups_table(view.groups, view.level),
        choices,
        str(view.level),
        [row.label for row in view.groups],
    )


def import_message(imported: Sequence[tuple[str, str]], errors: Sequence[str]) -> Any:
    """What an import did: the columns that got a hierarchy, then each file's error."""
    parts: list[Any] = []
    if imported:
        done = "; ".join(f"{column} ← {name}" for column, name in imported)
        parts.append(dmc.Alert(f"Imported: {done}.", color="teal", variant="light", id="hier-imported"))
    if errors:
        parts.append(
            dmc.Alert(
                dmc.Stack([dmc.Text(text, size="sm") for text in errors], gap=4),
                title="Not imported" if imported else "The hierarchy files were not imported",
                color="red",
                variant="light",
                className="error-message",
                id="hier-import-error",
            )
        )
    return dmc.Stack(parts, gap="xs") if parts else None
