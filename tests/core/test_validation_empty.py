"""A training matrix with no user, no item or no positive is refused by every fit.

Before, ``ocmf.fit(sp.csr_array((0, 0)), 8)`` returned a model silently and ``fbgd.fit`` on a
5×0 matrix warned that the iteration diverged. The check is ``_validation.check_trainable``,
called by the fit entry points only: splits, metrics, serving and fold-in keep accepting
empty matrices (users with no history, test sets with no positive).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu._core import validation as V
from fastpu import csrr, distributed, fbgd, homf, ocmf

FITS = {
    "ocmf": lambda Y: ocmf.fit(Y, 2, n_iter=1),
    "ocmf-sampled": lambda Y: ocmf.fit(Y, 2, n_iter=1, negatives="sampled"),
    "fbgd": lambda Y: fbgd.fit(Y, 2, n_iter=1),
    "csrr-e": lambda Y: csrr.fit(Y, 2, n_iter=1),
    "csrr-I": lambda Y: csrr.fit(Y, variant="I", n_iter=1),
    "homf": lambda Y: homf.fit(Y, 2, n_iter=1, T=2),
    "homf-step": lambda Y: homf.fit(Y, 2, n_iter=1, T=2, g="step"),
}


def _stored_zeros(m=4, n=3):
    """Stored entries whose values are all 0: no positive weighs anything."""
    return sp.csr_array((np.zeros(2), ([0, 2], [1, 0])), shape=(m, n))


def _refused(call, match):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match=match):
            call()
    assert [str(w.message) for w in caught] == []        # no misleading warning on the way


@pytest.mark.parametrize("fit", list(FITS), ids=list(FITS))
@pytest.mark.parametrize("shape", [(0, 0), (5, 0), (0, 4)], ids=["0x0", "5x0", "0x4"])
def test_a_zero_dimension_is_refused(fit, shape):
    m, n = shape
    _refused(lambda: FITS[fit](sp.csr_array(shape)),
             rf"Y has shape {m}×{n}; expected at least one user and one item")


@pytest.mark.parametrize("fit", list(FITS), ids=list(FITS))
def test_no_positive_is_refused(fit):
    _refused(lambda: FITS[fit](sp.csr_array((10, 10))),
             r"Y has shape 10×10 but no positive entries \(no stored entries\); expected at least "
             r"one positive")
    _refused(lambda: FITS[fit](_stored_zeros()),
             r"Y has shape 4×3 but no positive entries \(2 stored entries, all zero\)")


def test_the_reported_calls():
    _refused(lambda: ocmf.fit(sp.csr_array((0, 0)), 8), r"Y has shape 0×0; expected at least one user")
    _refused(lambda: ocmf.fit(sp.csr_array((10, 10)), 2), "Y has shape 10×10 but no positive entries")
    _refused(lambda: fbgd.fit(sp.csr_array((5, 0)), 2), r"Y has shape 5×0; expected at least one user")


def test_a_dataset_and_other_formats_are_checked_too():
    ds = fp.datasets.Dataset(name="empty", Y=sp.csr_array((0, 3)))
    _refused(lambda: ocmf.fit(ds, 2, n_iter=1), r"Y has shape 0×3; expected at least one user")
    _refused(lambda: fbgd.fit(sp.coo_array((3, 2)), 2), "Y has shape 3×2 but no positive entries")
    _refused(lambda: homf.fit(sp.csr_matrix((3, 2)), 2), "Y has shape 3×2 but no positive entries")


def test_fit_tensor_and_distributed_fit_are_checked():
    _refused(lambda: fbgd.fit_tensor(sp.csr_array((4, 5)), 2, pairs=np.array([[0, 0], [1, 1], [2, 0], [3, 1]])),
             "Y has shape 4×5 but no positive entries")

    def refuse(*a, **kw):                       # the check comes before any cluster starts
        raise AssertionError("a cluster was started for an empty Y")
    saved, distributed._client = distributed._client, refuse
    try:
        for method in ("ocmf", "fbgd", "csrr", "homf"):
            _refused(lambda: distributed.fit(sp.csr_array((6, 5)), 2, method=method),
                     "Y has shape 6×5 but no positive entries")
            _refused(lambda: distributed.fit(sp.csr_array((0, 5)), 2, method=method),
                     r"Y has shape 0×5; expected at least one user and one item")
    finally:
        distributed._client = saved


def test_one_positive_is_enough():
    Y = sp.csr_array((np.ones(1), ([2], [1])), shape=(4, 3))
    for name, fit in FITS.items():
        model = fit(Y)
        assert model.shape == (4, 3), name
        assert np.isfinite(model.scores([0, 2])).all(), name


def test_check_trainable_returns_its_input_and_names_the_argument():
    Y = sp.csr_array(np.eye(3))
    assert V.check_trainable(Y) is Y
    with pytest.raises(ValueError, match=r"Y_train has shape 2×0; expected at least one user"):
        V.check_trainable(sp.csr_array((2, 0)), name="Y_train")
    with pytest.raises(ValueError, match=r"R has shape 2×2 but no positive"):
        V.check_trainable(sp.csr_array((2, 2)), name="R")


def test_functions_that_take_an_empty_matrix_still_do():
    Y = fp.datasets.synthetic(12, 9, rank=2, density=0.35, seed=3).Y
    model = ocmf.fit(Y, 2, n_iter=1)
    empty = sp.csr_array(Y.shape)
    # split: an empty matrix splits into two empty ones
    tr, te = fp.split.holdout(sp.csr_array((5, 4)), seed=0)
    assert tr.shape == te.shape == (5, 4) and tr.nnz == te.nnz == 0
    # metrics: an empty training matrix (nothing seen), and test rows with no positive
    one = sp.csr_array((np.ones(1), ([3], [2])), shape=Y.shape)
    res = fp.evaluate(model, empty, one, k=3)
    assert res["n_users"] == 1 and np.isfinite(res["precision@3"])
    # serving and fold-in: users with no history
    items, scores = fp.recommend(model, users=[0, 1], n=3, Y_seen=empty)
    assert items.shape == (2, 3) and np.isfinite(scores).all()
    folded = fp.fold_in(model, sp.csr_array((3, Y.shape[1])))
    assert folded.user_factors.shape[0] == 3 and np.isfinite(folded.user_factors).all()
    # a Dataset may hold an empty matrix; fitting it is what is refused
    ds = fp.datasets.Dataset(name="empty", Y=sp.csr_array((2, 3)))
    assert ds.Y.shape == (2, 3)
    # the objectives still evaluate on an empty Y (only fits need a positive)
    assert np.isfinite(ocmf.objective(sp.csr_array((3, 2)), np.ones((3, 2)), np.ones((2, 2))))
    assert np.isfinite(fbgd.objective(sp.csr_array((3, 2)), np.ones((3, 2)), np.ones((2, 2))))
