"""Presentations: every classic case one click away, each link opening its dataset on the page of its story."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from privdash.application.presentations import PRESENTATIONS, presentation_links
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.data.contract import StatisticalType
from privdash.data.demo import demo_datasets


def services_for(tmp_path: Path, data_dir: Path) -> Services:
    return Services(Settings(store_dir=tmp_path / "store", cache_dir=tmp_path / "cache", data_dir=data_dir))


@pytest.mark.parametrize("with_adult", [True, False])
def test_links_open_each_dataset_on_its_page(tmp_path: Path, data_dir: Path, with_adult: bool) -> None:
    folder = data_dir if with_adult else tmp_path / "empty"
    services = services_for(tmp_path, folder)
    links = presentation_links(services)
    demos = demo_datasets(folder)
    assert [link.name for link in links] == [p.dataset for p in PRESENTATIONS if p.dataset in demos]
    assert ("adult" in [link.name for link in links]) is with_adult
    by_name = {p.dataset: p for p in PRESENTATIONS}
    for link in links:
        url = urlsplit(link.href)
        assert url.path == by_name[link.name].page
        state = services.links.state_from_query({k: v[0] for k, v in parse_qs(url.query).items()})
        assert state.dataset == f"demo:{link.name}" and state.k == by_name[link.name].k
        assert tuple(dict(step) for step in state.fix) == by_name[link.name].fix
        assert link.title == demos[link.name].title and link.story == demos[link.name].description
    postcodes = next(link for link in links if link.name == "postcodes")
    state = services.links.state_from_query({k: v[0] for k, v in parse_qs(urlsplit(postcodes.href).query).items()})
    # The Postcodes page reads the column types from the link: its Apply card needs the postcode column.
    assert state.types["postcode"] == StatisticalType.POSTCODE
