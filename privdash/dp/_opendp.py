"""The part of OpenDP that privdash's releases use, imported without OpenDP's extras.

``import opendp.prelude`` also imports ``opendp.extras`` (scikit-learn, SciPy, narwhals, rich and OpenDP's numpy,
polars, ibis and mbi helpers): about 1,700 modules, 1.2 s of CPU when the files are in the page cache and many
seconds when they are not (the first command after a boot or in a fresh container). The names below are the same
objects the prelude gives (``opendp.prelude`` re-exports them from these modules), so ``dp.enable_features`` and
``dp.GLOBAL_FEATURES`` are OpenDP's own setting, shared with a program that imports the prelude.
"""

from __future__ import annotations

import opendp.combinators as c
import opendp.measurements as m
import opendp.transformations as t
from opendp.accuracy import (
    discrete_laplacian_scale_to_accuracy,
    gaussian_scale_to_accuracy,
    laplacian_scale_to_accuracy,
)
from opendp.domains import atom_domain, vector_domain
from opendp.measures import max_divergence
from opendp.metrics import linf_distance, symmetric_distance
from opendp.mod import GLOBAL_FEATURES, OpenDPException, binary_search_param, disable_features, enable_features
from opendp.typing import L1Distance, L2Distance, i64

__all__ = [
    "GLOBAL_FEATURES",
    "L1Distance",
    "L2Distance",
    "OpenDPException",
    "atom_domain",
    "binary_search_param",
    "c",
    "disable_features",
    "discrete_laplacian_scale_to_accuracy",
    "enable_features",
    "gaussian_scale_to_accuracy",
    "i64",
    "laplacian_scale_to_accuracy",
    "linf_distance",
    "m",
    "max_divergence",
    "symmetric_distance",
    "t",
    "vector_domain",
]
