"""Shared charts, checked as data."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.ui.charts import size_histogram
from dashboard.ui.theme import COLORS
from privdash.application.riskview import size_bins


def test_size_histogram_marks_the_bins_below_k() -> None:
    sizes = np.array([1, 2, 4, 30])
    binned = size_bins(pd.DataFrame({"size": sizes, "classes": [3, 1, 2, 1], "records": sizes * [3, 1, 2, 1]}))
    fig = size_histogram(binned, 3)
    bars = fig.data[0]
    assert list(bars.x) == binned["label"].tolist() and list(bars.y) == binned["classes"].tolist()
    colors = dict(zip(bars.x, bars.marker.color, strict=True))
    assert colors["1"] == colors["2"] == COLORS["danger"] and colors["3"] == COLORS["primary"]
    assert [row[0] for row in bars.customdata] == binned["records"].tolist()
    assert fig.layout.xaxis.type == "category"
