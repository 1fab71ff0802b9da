"""Presentations: the classic cases of anonymization, each one click away from the Data page.

A presentation opens a built-in dataset (:func:`~privdash.data.demo.demo_datasets`) on the page that tells its
story, with the settings that make the point: Mirador's uniform tables and the five test-takers on the Risk page
(class sizes, k below the target), STRM's purchases on the Fix page with their k-member microaggregation already
added, Adult on the Fix page with the least-lossy search over ARX's hierarchies, the postcode patients on the
Postcodes page. The story is the dataset's one-line description. Nothing here imports Dash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from privdash.application.services import DEMO_PREFIX, Services
from privdash.application.state import ViewState
from privdash.data.demo import demo_datasets
from privdash.targets import DEFAULT_MAX_SUPPRESSION

__all__ = ["PRESENTATIONS", "PRESENT_PATH", "Presentation", "PresentationLink", "presentation_links"]

#: The path of the presenter's mode (``dashboard/pages/present.py``); its ``from`` parameter names the page its Exit
#: link goes back to.
PRESENT_PATH = "/present"


@dataclass(frozen=True)
class Presentation:
    """Which built-in dataset to open, on which page, with which targets and fix steps (the page's specs)."""

    dataset: str
    page: str
    k: int = 5
    #: The highest acceptable prosecutor risk: ``1 / k`` lets a table that meets k pass (the default, 0.2, is 1 / 5).
    max_risk: float = 0.2
    fix: tuple[Mapping[str, Any], ...] = field(default=())
    #: The page reads the column roles from the link (the Postcodes page does), so the link carries them.
    with_roles: bool = False


#: The presentations, in the order the Data page lists them.
PRESENTATIONS: tuple[Presentation, ...] = (
    Presentation("people", "/risk"),
    Presentation("uniform", "/risk"),
    Presentation("mirador", "/risk", k=2, max_risk=0.5),
    Presentation("five", "/risk", k=2, max_risk=0.5),
    Presentation("strm", "/fix", k=3, max_risk=0.34, fix=({"kind": "microaggregation", "k": 3, "decimals": None},)),
    Presentation("postcodes", "/postcodes", with_roles=True),
    Presentation(
        "adult",
        "/fix",
        fix=(
            # Every target the page's verdict checks (occupation is sensitive), with the one default limit.
            {
                "kind": "search",
                "k": 5,
                "l": ViewState.l,
                "t": ViewState.t,
                "max_risk": 0.2,
                "max_suppression": DEFAULT_MAX_SUPPRESSION,
                "metric": "loss",
            },
        ),
    ),
)


@dataclass(frozen=True)
class PresentationLink:
    """A presentation ready for the page: title, story, the link that opens it on its page and the link that shows
    its story in the presenter's mode (whose Exit goes back to that page)."""

    name: str
    title: str
    story: str
    href: str
    page: str
    present: str = ""


def presentation_links(services: Services) -> list[PresentationLink]:
    """The presentations whose dataset this server has (Adult only with the shared data folder), with their links."""
    demos = demo_datasets(services.settings.data_dir)
    links = []
    for item in PRESENTATIONS:
        demo = demos.get(item.dataset)
        if demo is None:
            continue
        state = ViewState(dataset=DEMO_PREFIX + item.dataset, k=item.k, max_risk=item.max_risk, fix=item.fix)
        if item.with_roles:
            state = services.initial_state(services.dataset(DEMO_PREFIX + item.dataset), state)
        search = services.links.search(state)
        present = PRESENT_PATH + search + ("&" if search else "?") + urlencode({"from": item.page})
        links.append(
            PresentationLink(item.dataset, demo.title, demo.description, item.page + search, item.page, present)
        )
    return links
