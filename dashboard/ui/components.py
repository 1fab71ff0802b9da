"""Component builders shared by the pages: the app shell, cards, headline numbers, messages.

Builders are plain functions returning Dash components, so they are tested as data (no browser). The number formats
(``fmt_count``, ``fmt_number``, ``fmt_share``) live in :mod:`dashboard.application.formats` and are re-exported here.
"""

from __future__ import annotations

from typing import Any

import dash_mantine_components as dmc
from dash import dcc

from dashboard.application.formats import fmt_count, fmt_number, fmt_share

__all__ = [
    "NAV_ITEMS",
    "card",
    "error_alert",
    "fmt_count",
    "fmt_number",
    "fmt_share",
    "no_dataset",
    "page_title",
    "progress_panel",
    "shell",
    "stat_card",
]

#: Navigation entries: (path, label, one-line description). Pages register at these paths.
NAV_ITEMS: tuple[tuple[str, str, str], ...] = (
    ("/data", "Data", "Load a table, set column roles"),
    ("/risk", "Risk", "Classes, privacy models, re-identification"),
    ("/fix", "Fix", "Generalise, suppress, aggregate"),
    ("/postcodes", "Postcodes", "Population per postcode area"),
)

# --- shell -------------------------------------------------------------------------------------------------------


def shell(page_container: Any) -> Any:
    """The app shell: header (title, dataset name, share), left navigation, and the page container."""
    header = dmc.AppShellHeader(
        dmc.Group(
            [
                dmc.Group(
                    [
                        dmc.Anchor(
                            dmc.Text("privdash", fw=700, size="xl", c="blue.8"), href="/data", underline="never"
                        ),
                        dmc.Text("privacy risk diagnostics", size="sm", c="dimmed", visibleFrom="sm"),
                    ],
                    gap="sm",
                ),
                dmc.Group(
                    [
                        dmc.Badge("no dataset", id="header-dataset", size="lg", color="gray", variant="light", maw=420),
                        share_control(),
                    ],
                    gap="sm",
                ),
            ],
            justify="space-between",
            h="100%",
            px="md",
        )
    )
    navbar = dmc.AppShellNavbar(
        dmc.Stack(
            [
                dmc.NavLink(
                    id={"type": "nav", "path": path},
                    label=label,
                    description=description,
                    href=path,
                )
                for path, label, description in NAV_ITEMS
            ],
            gap=4,
        ),
        p="sm",
    )
    return dmc.MantineProvider(
        [
            dcc.Location(id="url", refresh=False),
            dcc.Location(id="redirect", refresh="callback-nav"),
            dmc.AppShell(
                [header, navbar, dmc.AppShellMain(page_container)],
                header={"height": 60},
                navbar={"width": 240, "breakpoint": "sm"},
                padding="lg",
            ),
        ],
        id="mantine-provider",
    )


def share_control() -> Any:
    """The share button: a popover with the current link, a copy button and what the link reveals."""
    return dmc.Popover(
        [
            dmc.PopoverTarget(dmc.Button("Share", id="share-button", variant="filled", size="sm")),
            dmc.PopoverDropdown(
                dmc.Stack(
                    [
                        dmc.Text("Link to this view", fw=600, size="sm"),
                        dmc.TextInput(id="share-link", readOnly=True, w=420, size="xs"),
                        dmc.Group(
                            [
                                dmc.Button("Copy link", id="copy-link", size="xs", variant="light"),
                                dmc.Text("", id="copy-status", size="xs", c="dimmed"),
                            ]
                        ),
                        dmc.Text(
                            "The link carries the dataset id, column roles and settings, never data values. "
                            "Anyone with the link can open this dataset until it expires.",
                            size="xs",
                            c="dimmed",
                            maw=420,
                        ),
                    ],
                    gap="xs",
                )
            ),
        ],
        position="bottom-end",
        withArrow=True,
        shadow="md",
        id="share-popover",
    )


# --- building blocks ---------------------------------------------------------------------------------------------


def page_title(title: str, description: str | None = None) -> Any:
    """The title block at the top of a page."""
    children: list[Any] = [dmc.Title(title, order=2)]
    if description:
        children.append(dmc.Text(description, c="dimmed", size="sm"))
    return dmc.Stack(children, gap=2, mb="md")


def card(title: str | None, *children: Any, description: str | None = None, **props: Any) -> Any:
    """A bordered card with an optional title and description."""
    head: list[Any] = []
    if title:
        head.append(dmc.Text(title, fw=600, size="md"))
    if description:
        head.append(dmc.Text(description, size="xs", c="dimmed"))
    body = [dmc.Stack(head, gap=0, mb="sm")] if head else []
    return dmc.Card([*body, *children], **props)


def stat_card(
    label: str,
    value: str,
    *,
    passed: bool | None = None,
    detail: str | None = None,
    card_id: str | None = None,
) -> Any:
    """A headline number with an optional pass / fail badge against its target and a detail line."""
    badge = None
    if passed is not None:
        badge = dmc.Badge(
            "pass" if passed else "fail",
            color="green" if passed else "red",
            variant="filled",
            size="sm",
            className="stat-status",
        )
    props: dict[str, Any] = {"padding": "md", "className": "stat-card"}
    if card_id:
        props["id"] = card_id
    return dmc.Card(
        [
            dmc.Group([dmc.Text(label, size="sm", c="dimmed", fw=500), badge], justify="space-between", gap="xs"),
            dmc.Text(value, fz=28, fw=700, className="stat-value"),
            dmc.Text(detail or "", size="xs", c="dimmed", className="stat-detail"),
        ],
        **props,
    )


def error_alert(message: str, *, title: str = "Something is wrong with the input", alert_id: str | None = None) -> Any:
    """A red message box for a user-caused error (the text comes from the core's exception)."""
    props: dict[str, Any] = {"title": title, "color": "red", "variant": "light", "className": "error-message"}
    if alert_id:
        props["id"] = alert_id
    return dmc.Alert(message, **props)


def no_dataset(message: str | None = None) -> Any:
    """What a page shows without a dataset: a pointer to the Data page."""
    return dmc.Alert(
        [
            dmc.Text(message or "No dataset is open."),
            dmc.Anchor("Open the Data page to pick a built-in dataset or upload a file.", href="/data"),
        ],
        title="No data yet",
        color="blue",
        variant="light",
    )


def progress_panel(prefix: str, *, status: str = "Waiting ...", dimmed: bool = True) -> Any:
    """Progress bar, status line and cancel button of a background job: ids ``<prefix>-progress``,
    ``<prefix>-status`` and ``<prefix>-cancel``."""
    text_props: dict[str, Any] = {"c": "dimmed"} if dimmed else {}
    return dmc.Stack(
        [
            dmc.Progress(id=f"{prefix}-progress", value=0, striped=True, animated=True),
            dmc.Group(
                [
                    dmc.Text(status, id=f"{prefix}-status", size="sm", **text_props),
                    dmc.Button("Cancel", id=f"{prefix}-cancel", size="xs", variant="subtle", color="red"),
                ],
                justify="space-between",
            ),
        ],
        gap=4,
    )
