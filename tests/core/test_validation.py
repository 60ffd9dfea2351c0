"""The boundary: canonical forms, and one test per error message."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastpu._core import validation as V


def test_check_csr_canonicalises():
    Y = sp.coo_array((np.array([1.0, 2.0, 3.0]), (np.array([1, 0, 1]), np.array([2, 1, 2]))), shape=(2, 3))
    C = V.check_csr(Y)
    assert C.format == "csr" and C.indices.dtype == np.int64 and C.indptr.dtype == np.int64
    assert C.data.dtype == np.float64 and C.has_sorted_indices
    np.testing.assert_array_equal(C.toarray(), [[0, 2, 0], [0, 0, 4]])
    assert V.check_csr(sp.csc_matrix(Y)).format == "csr"


@pytest.mark.parametrize("Y, exc, msg", [
    (np.ones((2, 2)), TypeError, "Y must be a scipy.sparse matrix or array, got ndarray"),
    (sp.csr_array(np.array([[np.inf, 0.0]])), ValueError, "non-finite"),
    (sp.csr_array(np.array([[-2.0, 0.0]])), ValueError, "negative stored values"),
    (sp.csr_array((np.ones(1), np.array([5]), np.array([0, 1])), shape=(1, 3)), ValueError,
     r"indices out of range \[0, 3\)"),
])
def test_check_csr_errors(Y, exc, msg):
    with pytest.raises(exc, match=msg):
        V.check_csr(Y)


def test_check_csr_malformed_indptr():
    Y = sp.csr_array((np.ones(2), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 3))
    Y.indptr = np.array([0, 2])
    with pytest.raises(ValueError, match="indptr has length 2, expected 3"):
        V.check_csr(Y)
    Y = sp.csr_array((np.ones(2), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 3))
    Y.indptr = np.array([0, 1, 5])
    with pytest.raises(ValueError, match="indptr ends at 5 but only 2 indices"):
        V.check_csr(Y)
    coo = sp.coo_array((np.ones(1), (np.array([4]), np.array([0]))), shape=(5, 2))
    coo.row[0] = 9
    with pytest.raises(ValueError, match="COO coordinates out of range"):
        V.check_csr(coo)


def test_check_csr_shape():
    with pytest.raises(ValueError, match="Y has shape 2×2, expected 3×2"):
        V.check_csr(sp.csr_array((2, 2)), shape=(3, 2))


def test_dense_and_vector_checks():
    with pytest.raises(TypeError, match="W must be a dense array, got a scipy.sparse"):
        V.check_dense(sp.csr_array((2, 2)), name="W")
    with pytest.raises(ValueError, match="W must be 2-dimensional"):
        V.check_dense(np.ones(3), name="W")
    with pytest.raises(ValueError, match="W has 1 non-finite"):
        V.check_dense(np.array([[np.nan]]), name="W")
    with pytest.raises(TypeError, match="W must be a numeric array"):
        V.check_dense([["a"]], name="W")
    with pytest.raises(ValueError, match="W must be non-negative"):
        V.check_dense(-np.ones((1, 1)), name="W", nonnegative=True)
    with pytest.raises(ValueError, match="p must be positive"):
        V.check_vector(np.zeros(2), name="p", size=2, positive=True)
    np.testing.assert_array_equal(V.check_vector(None, name="p", size=3), np.ones(3))
    np.testing.assert_array_equal(V.check_vector(2.0, name="p", size=2), [2.0, 2.0])


def test_features_graph_and_scalars():
    with pytest.raises(ValueError, match="X has no columns"):
        V.check_features(np.ones((3, 0)), name="X", n_rows=3)
    S = V.check_graph(np.array([[0, 2.0], [2.0, 0]]), name="g", n=2)
    np.testing.assert_array_equal(V.laplacian(S).toarray(), [[2, -2], [-2, 2]])
    for bad, msg in [(True, "k must be an integer"), (0, "k must be >= 1")]:
        with pytest.raises((TypeError, ValueError), match=msg):
            V.check_k(bad)
    with pytest.raises(TypeError, match="lam must be a real number"):
        V.check_scalar("1", name="lam")
    with pytest.raises(ValueError, match="lam must be <= 1"):
        V.check_scalar(2.0, name="lam", maximum=1.0)
    with pytest.raises(ValueError, match="lam must be < 1"):
        V.check_scalar(1.0, name="lam", maximum=1.0, strict_max=True)
    with pytest.raises(ValueError, match="unknown mode 'x'; expected one of 'a', 'b'"):
        V.check_choice("x", name="mode", choices=("a", "b"))
    with pytest.raises(TypeError, match="n_iter must be an integer"):
        V.check_int(1.5, name="n_iter")
    with pytest.raises(ValueError, match="n_iter must be >= 0"):
        V.check_int(-1, name="n_iter")
    with pytest.raises(ValueError, match="users must be a 1-d array"):
        V.check_users(np.zeros((2, 2), dtype=int), 3)
    with pytest.raises(ValueError, match=r"needs a dense 10×10 matrix .* limit of 50 entries; use X"):
        V.check_dense_size(10, 10, what="thing", alternative="X", limit=50)


def test_a_dataframe_gets_the_pairs_advice():
    import pandas as pd           # the data extra installs it

    import fastpu as fp

    df = pd.DataFrame({"user": ["a", "b"], "item": ["x", "y"]})
    with pytest.raises(TypeError, match=r"got DataFrame; for \(user, item\[, value\]\) pairs use "
                                        r"fastpu.datasets.from_pairs"):
        fp.ocmf.fit(df, 2)
    wide = pd.DataFrame(np.eye(5, 6))           # a users × items table, not pairs
    with pytest.raises(TypeError, match=r"got DataFrame; a users × items table \(5 × 6\) is "
                                        r"scipy.sparse.csr_array\(df.to_numpy\(\)\)"):
        fp.ocmf.fit(wide, 2)


def test_a_file_name_gets_the_reader_advice(tmp_path):
    """fit("interactions.csv", k) was told to wrap dense data in a sparse matrix."""
    import fastpu as fp

    for path in ("interactions.csv", tmp_path / "r.csv"):
        with pytest.raises(TypeError, match=r"got (str|PosixPath|WindowsPath); read a file of "
                                            r"user,item\[,value\] lines first, "
                                            r"Y=fastpu.datasets.read_csv\("):
            fp.ocmf.fit(path, 2)
    with pytest.raises(TypeError, match=r"got ndarray; wrap dense data"):
        fp.ocmf.fit(np.eye(3), 2)


def _complex_cases():
    import fastpu as fp
    Y = fp.datasets.synthetic(30, 20, rank=2, density=0.3, seed=1).Y
    Yc = sp.csr_array(Y.astype(complex) + 1j * Y)

    def npz(tmp_path):
        p = tmp_path / "y.npz"
        sp.save_npz(p, sp.csr_matrix(Yc))
        return fp.datasets.load_npz(p)

    return {
        "Y": (lambda _: fp.ocmf.fit(Yc, 2, n_iter=1), "Y"),
        "Y imaginary": (lambda _: fp.ocmf.fit(sp.csr_array(1j * Y.astype(complex)), 2, n_iter=1), "Y"),
        "user_features": (lambda _: fp.ocmf.fit(Y, 2, n_iter=1, user_features=np.ones((30, 3)) * (1 + 1j)),
                          "user_features"),
        "user_features sparse": (lambda _: fp.ocmf.fit(Y, 2, n_iter=1,
                                                       user_features=sp.csr_array(np.eye(30, dtype=complex))),
                                 "user_features"),
        "user_graph": (lambda _: fp.ocmf.fit(Y, 2, n_iter=1, user_graph=sp.csr_array(np.eye(30) * (1 + 1j))),
                       "user_graph"),
        "svt": (lambda _: fp.optim.svt(np.eye(3) * (1 + 1j), 0.5), "M"),
        "soft_threshold": (lambda _: fp.optim.soft_threshold(np.ones(3) * 1j, 0.5), "x"),
        "soft_threshold scalar": (lambda _: fp.optim.soft_threshold(2j, 0.5), "x"),
        "load_npz": (npz, r"the matrix in path '.*y\.npz'"),
    }


@pytest.mark.parametrize("case", list(_complex_cases()))
def test_complex_input_is_refused_not_cast_to_real(case, tmp_path):
    # a cast to float64 used to drop the imaginary part (numpy's ComplexWarning the only sign)
    call, name = _complex_cases()[case]
    with pytest.raises(TypeError, match=rf"^{name} must be real, got complex dtype complex128; expected real"):
        call(tmp_path)
