"""ocmf's Jacobi-preconditioned row CG (``precondition=``): when it is on, what it defaults to,
that it fits the same model when the rows are solved exactly, and how bad values are refused.
The kernel's preconditioned CG against the rows' minimisers is in tests/kernels/test_updates.py,
the grid's against the kernel in tests/distributed/test_grid.py."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastpu import ocmf
from fastpu.ocmf import _check as ocmf_check


def _data(seed=0, m=40, n=30, density=0.15):
    rng = np.random.default_rng(seed)
    return sp.csr_array((rng.random((m, n)) < density).astype(np.float64))


@pytest.mark.parametrize("k, nu, dtype, on", [(64, 1.0, "float32", True),
                                              (64, 0.5, "float64", True),
                                              (64, 0.0, "float32", False),
                                              (63, 1.0, "float32", False),
                                              (8, 1.0, "float32", False)])
def test_the_default_preconditions_with_frequency_scaled_penalties_at_high_rank(k, nu, dtype, on):
    Y = _data(m=80, n=70)
    model = ocmf.fit(Y, k, loss="square", lam=0.01, nu=nu, n_iter=1, dtype=dtype)
    assert model.params["precondition"] is on
    assert k >= ocmf_check.PRECONDITION_MIN_K or not on


@pytest.mark.parametrize("loss, steps", [("square", 1), ("logistic", 2), ("squared_hinge", 2)])
def test_preconditioned_cg_takes_fewer_steps_by_default(loss, steps):
    """One preconditioned step for the square loss (it does the work of three plain ones),
    two for the losses with a line search; an explicit ``cg_steps`` wins."""
    Y = _data()
    on = ocmf.fit(Y, 3, loss=loss, n_iter=1, precondition=True)
    off = ocmf.fit(Y, 3, loss=loss, n_iter=1, precondition=False)
    assert (on.params["precondition"], on.params["cg_steps"]) == (True, steps)
    assert (off.params["precondition"], off.params["cg_steps"]) == (False,
                                                                     3 if loss == "square" else 4)
    assert ocmf.fit(Y, 3, loss=loss, n_iter=1, precondition=True,
                    cg_steps=5).params["cg_steps"] == 5


@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_solved_rows_give_the_same_model_preconditioned_or_not(loss):
    """With enough CG and Newton steps each half-step solves its rows, and the preconditioner
    changes only the path to them: the two fits agree to the solver's tolerance."""
    Y = _data(1)
    kw = dict(loss=loss, rho=0.05, lam=0.05, nu=1.0, n_iter=4, dtype="float64", seed=3,
              newton_steps=8 if loss == "logistic" else 1, cg_steps=12, cg_tol=1e-12)
    a = ocmf.fit(Y, 5, precondition=True, **kw)
    b = ocmf.fit(Y, 5, precondition=False, **kw)
    np.testing.assert_allclose(a.scores(), b.scores(), rtol=0,
                               atol=1e-7 * np.abs(b.scores()).max())


def test_a_preconditioned_fit_decreases_the_objective_it_records():
    Y = _data(2, m=90, n=80)
    model = ocmf.fit(Y, 64, loss="square", rho=0.3, a_bar=0.0, lam=0.01, nu=1.0,
                     negatives="all", n_iter=6)
    assert model.params["precondition"]
    obj = [h["objective"] for h in model.history]
    assert all(np.isfinite(obj))
    assert all(b <= a * (1 + 1e-6) for a, b in zip(obj, obj[1:]))


@pytest.mark.parametrize("bad", ["yes", 1, 0.0])
def test_bad_precondition_is_refused_by_name(bad):
    with pytest.raises(TypeError, match="precondition"):
        ocmf.fit(_data(), 2, n_iter=1, precondition=bad)


def test_an_edited_precondition_entry_is_refused():
    model = ocmf.fit(_data(), 2, n_iter=1)
    model.params["precondition"] = "sometimes"
    with pytest.raises(TypeError, match=r"model.params\['precondition'\] must be True or False"):
        ocmf_check.check_fitted(model)
