"""Accessibility at WCAG 2.1 AA: axe-core on every page in its main states, and the colours of the theme.

axe-core is the copy bundled with the PyPI package ``axe-playwright-python``; it is injected with Playwright's
``evaluate``, which the app's Content-Security-Policy does not restrict, and runs the rules tagged wcag2a, wcag2aa,
wcag21a and wcag21aa. Any violation of impact critical or serious fails the test, with the rule, axe's explanation
and the elements in the message. The states: nothing open, a refused file, an uploaded file and the demo on the Data
page; failing targets, met targets, the share dialog, a chart's table of numbers and a background job running on the
Risk page; a fixed view on the Fix page; the map and the US bar chart on the Postcodes page.

The colour checks compute WCAG contrast ratios, and simulate colour-vision deficiencies with the matrices of
Machado, Oliveira and Fernandes (2009), here in the test, not with the app's code.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, Route, expect

from dashboard.ui.components import fmt_count
from dashboard.ui.theme import COLORS, PALETTES
from privdash.application.postcodes import GeoSettings
from privdash.application.riskview import size_bins
from privdash.application.services import Services
from privdash.application.settings import Settings
from privdash.application.state import ViewState
from privdash.geo.postcodes import Strategy

TIMEOUT = 30_000
VIEWPORT = {"width": 1400, "height": 1000}
AXE = Axe()
AXE_OPTIONS = {
    "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
    "resultTypes": ["violations"],
}
BLOCKING = ("critical", "serious")


# --- helpers -------------------------------------------------------------------------------------------------------


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is now (every impact)."""
    response = AXE.run(page, options=AXE_OPTIONS).response
    # A run that checked nothing (axe not loaded, an empty page) must not pass as clean.
    assert response["testEngine"]["name"] == "axe-core" and len(response["passes"]) >= 10, "axe-core did not run"
    return list(response["violations"])


def assert_accessible(page: Page, state: str) -> None:
    """No critical or serious violation of WCAG 2.1 AA on the page in ``state``."""
    problems = [
        f"{v['id']} ({v['impact']}): {v['help']}; at {', '.join(str(n['target']) for n in v['nodes'][:6])}"
        for v in axe_violations(page)
        if v["impact"] in BLOCKING
    ]
    assert not problems, f"{state}:\n" + "\n".join(problems)


def settled(page: Page) -> None:
    """No Dash callback running and every data grid on show drawn."""
    expect(page.locator('[data-dash-is-loading="true"]')).to_have_count(0, timeout=TIMEOUT)
    # A grid that is not on show (a closed tab, an empty panel) is drawn when it is shown.
    expect(page.locator(".ag-delay-render:visible")).to_have_count(0, timeout=TIMEOUT)


def upload(page: Page, path: Path) -> None:
    with page.expect_file_chooser() as chooser:
        page.click("#upload-zone")
    chooser.value.set_files(str(path))


def open_numbers(page: Page, graph_id: str) -> None:
    """Open the table of numbers under a chart; it holds a row per plotted point."""
    settled(page)  # a page may redraw its results once after loading
    page.locator(f"#{graph_id}-figure > details.chart-numbers > summary").click()
    expect(page.locator(f"#{graph_id}-figure .chart-data table tbody tr").first).to_be_attached(timeout=TIMEOUT)


@pytest.fixture(scope="module")
def services(live_settings: Settings) -> Services:
    return Services(live_settings)


@pytest.fixture
def wide(page: Page) -> Iterator[Page]:
    page.set_viewport_size(VIEWPORT)
    yield page


# --- the harness finds what it should ----------------------------------------------------------------------------


def test_the_audit_reports_an_unnamed_control(wide: Page, live_server: str) -> None:
    """A control without a name, added to a clean page, is reported as critical (rule ``label``)."""
    wide.goto(f"{live_server}/data")
    expect(wide.locator("#upload-zone")).to_be_visible(timeout=TIMEOUT)
    settled(wide)
    assert_accessible(wide, "Data, nothing open")
    wide.evaluate("document.getElementById('main-content').append(document.createElement('input'))")
    found = {(v["id"], v["impact"]) for v in axe_violations(wide)}
    assert ("label", "critical") in found


# --- the pages ---------------------------------------------------------------------------------------------------


def test_data_page_refused_uploaded_and_demo(wide: Page, live_server: str, data_dir: Path, tmp_path: Path) -> None:
    wide.goto(f"{live_server}/data")
    bad = tmp_path / "one-column.csv"
    bad.write_bytes(b"name\nAda\nGrace\n")
    upload(wide, bad)
    expect(wide.locator("#upload-error")).to_be_visible(timeout=TIMEOUT)
    settled(wide)
    assert_accessible(wide, "Data, a refused file")

    upload(wide, data_dir / "arx_adult" / "adult_subset.csv")
    expect(wide.locator("#dataset-title")).to_have_text("adult_subset.csv", timeout=TIMEOUT)
    expect(wide.locator("#preview-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    settled(wide)
    assert_accessible(wide, "Data, an uploaded file")

    wide.goto(f"{live_server}/data{ViewState(dataset='demo:people').to_search()}")
    expect(wide.locator("#preview-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    settled(wide)
    assert_accessible(wide, "Data, the demo dataset")


def test_risk_page_failing_met_shared_and_running(wide: Page, live_server: str, services: Services) -> None:
    demo = services.initial_state(services.dataset("demo:people"), ViewState())
    wide.goto(f"{live_server}{demo.href('/risk')}")
    expect(wide.locator("#verdict")).to_have_attribute("data-status", "fail", timeout=TIMEOUT)
    expect(wide.locator("#class-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    expect(wide.locator("#msu-summary")).to_be_visible(timeout=TIMEOUT)
    open_numbers(wide, "size-chart")
    settled(wide)
    assert_accessible(wide, "Risk, failing targets, with a chart's numbers open")
    # The table holds the plotted numbers: the class-size bins of the diagnosis, those below k marked in words.
    binned = size_bins(services.diagnosis(demo).classes.size_frequencies())
    expected = [
        [label, fmt_count(n), fmt_count(records), "below k" if low < demo.k else ""]
        for label, n, records, low in zip(
            binned["label"], binned["classes"], binned["records"], binned["low"], strict=True
        )
    ]
    cells = "rows => rows.map(r => Array.from(r.cells, c => c.textContent))"
    assert wide.locator("#size-chart-figure .chart-data tbody tr").evaluate_all(cells) == expected

    wide.keyboard.press("Home")
    wide.click("#share-button")
    dialog = wide.get_by_role("dialog")
    expect(dialog).to_have_css("opacity", "1", timeout=TIMEOUT)
    expect(wide.locator("#share-link")).to_have_value(wide.url, timeout=TIMEOUT)
    assert_accessible(wide, "Risk, the share dialog open")
    wide.keyboard.press("Escape")
    expect(dialog).to_have_count(0, timeout=TIMEOUT)

    # One quasi-identifier, no sensitive attribute: classes of about 2,500 people meet every target.
    met = demo.with_quasi_identifiers(["sex"], [])
    wide.goto(f"{live_server}{met.href('/risk')}")
    expect(wide.locator("#verdict")).to_have_attribute("data-status", "pass", timeout=TIMEOUT)
    expect(wide.locator("#card-k .stat-status")).to_have_text("pass")
    expect(wide.locator("#class-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    settled(wide)
    assert_accessible(wide, "Risk, every target met")

    # The QI-combination job held in flight: its progress bar, status line and cancel button are shown.
    held: list[Route] = []

    def hold(route: Route) -> None:
        if "combo-results" in (route.request.post_data or ""):
            held.append(route)
        else:
            route.continue_()

    wide.route("**/_dash-update-component*", hold)
    try:
        wide.goto(f"{live_server}{demo.href('/risk')}")
        expect(wide.locator("#combo-running")).to_be_visible(timeout=TIMEOUT)
        expect(wide.locator("#class-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
        expect(wide.locator(".ag-delay-render")).to_have_count(0, timeout=TIMEOUT)
        assert held
        assert_accessible(wide, "Risk, a background job running")
    finally:
        for route in held:
            route.continue_()
        wide.unroute("**/_dash-update-component*")


def test_fix_page_with_steps(wide: Page, live_server: str, services: Services) -> None:
    age = {"kind": "generalize", "column": "age", "rule": {"builder": "intervals", "widths": [5, 10, 20]}, "level": 2}
    state = services.initial_state(services.dataset("demo:people"), ViewState())
    state = state.with_quasi_identifiers(["age", "sex", "postcode"], ["diagnosis"]).updated(fix=(age,))
    wide.goto(f"{live_server}{state.href('/fix')}")
    expect(wide.locator("#fix-after-k .stat-value")).to_be_visible(timeout=TIMEOUT)
    expect(wide.locator("#fix-k-curve .main-svg").first).to_be_visible(timeout=TIMEOUT)
    open_numbers(wide, "fix-k-curve")
    settled(wide)
    assert_accessible(wide, "Fix, one step applied, the curve's numbers open")


def test_postcodes_page_map_and_bars(wide: Page, live_server: str) -> None:
    wide.goto(f"{live_server}/postcodes")
    expect(wide.locator("#pc-map .maplibregl-canvas")).to_be_visible(timeout=TIMEOUT)
    open_numbers(wide, "pc-map")
    settled(wide)
    assert_accessible(wide, "Postcodes, the map with its numbers open")

    us = ViewState(geo=GeoSettings(source="us", strategy=Strategy.ZIP3).to_dict())
    wide.goto(f"{live_server}/postcodes{us.to_search()}")
    expect(wide.locator("#pc-bars .main-svg").first).to_be_visible(timeout=TIMEOUT)
    settled(wide)
    assert_accessible(wide, "Postcodes, the US bar chart")


def test_narrow_screen_with_the_menu_open(page: Page, live_server: str) -> None:
    page.set_viewport_size({"width": 360, "height": 800})
    page.goto(f"{live_server}/data{ViewState(dataset='demo:people').to_search()}")
    expect(page.locator("#preview-grid .ag-row").first).to_be_visible(timeout=TIMEOUT)
    settled(page)
    assert_accessible(page, "Data, 360 px wide")
    page.click("#nav-burger")
    expect(page.locator("#nav-burger")).to_have_attribute("aria-expanded", "true", timeout=TIMEOUT)
    assert_accessible(page, "Data, 360 px wide, the navigation menu open")


# --- colours -------------------------------------------------------------------------------------------------------


def _linear(hex_color: str) -> np.ndarray:
    """Linear-light sRGB of ``#rrggbb`` (IEC 61966-2-1)."""
    channels = np.array([int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio (L1 + 0.05) / (L2 + 0.05) of two colours."""
    weights = np.array([0.2126, 0.7152, 0.0722])
    high, low = sorted((float(weights @ _linear(a)), float(weights @ _linear(b))), reverse=True)
    return (high + 0.05) / (low + 0.05)


def tint(hex_color: str, alpha: float) -> str:
    """``hex_color`` at ``alpha`` over white, as Mantine draws the background of a light variant."""
    rgb = np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)])
    mixed = np.round(rgb * alpha + 255 * (1 - alpha)).astype(int)
    return "#" + "".join(f"{v:02x}" for v in mixed)


#: Colour-vision deficiency simulation, severity 1 (Machado, Oliveira and Fernandes 2009), on linear sRGB.
CVD = {
    "normal": np.eye(3),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}


def lab(linear_rgb: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of a linear sRGB colour."""
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear_rgb
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_text_colours_meet_aa() -> None:
    """Shade 8 of each colour (Mantine's filled and light variants with primaryShade 8, and ``c="red.8"`` text) is
    4.5:1 against white text or background, against its own 10 % tint and against the grey 0 of striped rows."""
    for name, shades in PALETTES.items():
        shade = shades[8]
        assert contrast(shade, "#ffffff") >= 4.5, name
        assert contrast(shade, tint(shade, 0.1)) >= 4.5, name
        assert contrast(shade, "#f8f9fa") >= 4.5, name
        assert contrast(shades[9], "#ffffff") >= 4.5, name  # the hover shade of filled buttons
    assert contrast(COLORS["muted"], "#ffffff") >= 4.5
    assert contrast(COLORS["text"], "#ffffff") >= 4.5


def smallest_gap(colors: list[str]) -> tuple[float, str]:
    """The smallest CIELAB distance between two of ``colors``, over normal vision and the three dichromacies."""
    gaps = []
    for kind, matrix in CVD.items():
        seen = [lab(np.clip(matrix @ _linear(color), 0, 1)) for color in colors]
        n = len(seen)
        gaps += [(float(np.linalg.norm(seen[i] - seen[j])), kind) for i in range(n) for j in range(i + 1, n)]
    return min(gaps)


def test_traffic_lights_contrast_and_stay_apart_for_colour_blind_viewers() -> None:
    """Fail, amber and pass fill map areas and bars on white: 3:1 each (1.4.11), and every pair at least 20 CIELAB
    units apart with normal vision and under protanopia, deuteranopia and tritanopia."""
    lights = [COLORS["danger"], COLORS["warning"], COLORS["ok"]]
    for color in lights:
        assert contrast(color, "#ffffff") >= 3.0, color
    gap, kind = smallest_gap(lights)
    assert gap >= 20, (gap, kind)
    # Mantine's red, yellow and green fail the same check: red and green come close for deuteranopes.
    assert smallest_gap(["#e03131", "#f08c00", "#2f9e44"])[0] < 20
