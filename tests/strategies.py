"""Hypothesis strategies: small CSR matrices with empty rows, empty columns and nnz = 0."""

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st


@st.composite
def csr_matrices(draw, min_rows=1, max_rows=8, min_cols=1, max_cols=8, values="weights",
                 positive=False):
    """``positive=True``: at least one stored entry (a training Y: every fit refuses one without)."""
    m = draw(st.integers(min_rows, max_rows))
    n = draw(st.integers(min_cols, max_cols))
    density = draw(st.sampled_from([0.0, 0.15, 0.4, 0.8]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    mask = rng.random((m, n)) < density
    if positive and not mask.any():
        mask[rng.integers(m), rng.integers(n)] = True
    if values == "ones":
        vals = np.ones((m, n))
    elif values == "signed":
        vals = rng.normal(size=(m, n))
    else:
        vals = rng.uniform(0.5, 2.0, size=(m, n))
    return sp.csr_array(np.where(mask, vals, 0.0))


@st.composite
def dense_arrays(draw, shape, scale=1.0):
    seed = draw(st.integers(0, 2**31 - 1))
    return np.random.default_rng(seed).normal(scale=scale, size=shape)


seeds = st.integers(0, 2**31 - 1)


# the losses, from the one table that lists them (fastpu/_kernels/losses.py): tests that run
# "every loss" are parametrised over these, so a new loss is tested where the others are
from fastpu._kernels.losses import LOSS_TABLE  # noqa: E402

LOSS_NAMES = tuple(loss.name for loss in LOSS_TABLE)
QUADRATIC_LOSSES = tuple(loss.name for loss in LOSS_TABLE if loss.quadratic)
LINE_SEARCH_LOSSES = tuple(loss.name for loss in LOSS_TABLE if not loss.quadratic)
