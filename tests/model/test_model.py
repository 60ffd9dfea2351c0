"""Factorization, recommend, save and thread control."""

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu._core.threads import limit_threads


def _model(m=5, n=7, k=2, seed=0):
    rng = np.random.default_rng(seed)
    return fp.Factorization(rng.normal(size=(m, k)), rng.normal(size=(n, k)), method="test")


def test_scores_are_products_of_factors():
    model = _model()
    np.testing.assert_allclose(model.scores(), model.user_factors @ model.item_factors.T)
    np.testing.assert_allclose(model.scores([3, 1]), (model.user_factors @ model.item_factors.T)[[3, 1]])
    assert model.shape == (5, 7)
    assert model.W is model.user_factors and model.H is model.item_factors


def test_recommend_excludes_seen_and_orders_by_score():
    model = _model()
    seen = sp.csr_array(np.eye(5, 7))
    items, scores = fp.recommend(model, seen, n=3)
    S = model.scores()
    for i in range(5):
        order = [j for j in np.argsort(-S[i], kind="stable") if j != i][:3]
        assert list(items[i]) == order
        np.testing.assert_allclose(scores[i], S[i, order])


def test_recommend_pads_when_few_items_left():
    model = _model(2, 3)
    seen = sp.csr_array(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    items, scores = fp.recommend(model, seen, n=5)
    assert items.shape == (2, 3)                 # min(n, n_items) columns, never n
    assert items[0, 0] == 2 and np.all(items[0, 1:] == -1) and np.all(np.isneginf(scores[0, 1:]))
    assert sorted(items[1]) == [0, 1, 2]


def test_recommend_blocks_do_not_change_the_answer(monkeypatch):
    from fastpu._core import factorization as model_mod

    model = _model(40, 9)
    a = fp.recommend(model, None, n=4)
    monkeypatch.setattr(model_mod, "_BLOCK_BYTES", 8 * 9 * 3)   # blocks of 3 users
    b = fp.recommend(model, None, n=4)
    np.testing.assert_array_equal(a[0], b[0])


@pytest.mark.parametrize("kw, exc, msg", [
    (dict(Y_seen=sp.csr_array((4, 7))), ValueError, "Y_seen has shape 4×7, expected 5×7"),
    (dict(n=0), ValueError, "n must be >= 1"),
    (dict(users=[7]), ValueError, r"users must lie in \[0, 5\)"),
    (dict(users=[0.5]), TypeError, "users must be integer indices"),
])
def test_recommend_rejects_bad_input(kw, exc, msg):
    args = dict(Y_seen=None, n=3)
    args.update(kw)
    with pytest.raises(exc, match=msg):
        fp.recommend(_model(), **args)


def test_thread_control_restores_previous_count():
    before = fp.get_num_threads()
    with limit_threads(1):
        assert fp.get_num_threads() == 1
    assert fp.get_num_threads() == before
    with pytest.raises(RuntimeError):
        with limit_threads(1):
            raise RuntimeError("boom")
    assert fp.get_num_threads() == before
    old = fp.set_num_threads(1)
    assert fp.get_num_threads() == 1
    fp.set_num_threads(old)
    with pytest.raises(ValueError, match="n_threads must be in"):
        fp.set_num_threads(10_000)
    with pytest.raises(TypeError, match="n_threads must be an integer"):
        fp.set_num_threads("2")


def test_save_is_a_method_and_load_gives_the_same_model(tmp_path):
    from fastpu.model import load_model as load

    model = _model()
    model.save(tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    assert type(back) is fp.Factorization and back.method == "test"
    np.testing.assert_array_equal(back.user_factors, model.user_factors)
    np.testing.assert_array_equal(back.item_factors, model.item_factors)
    assert back.user_ids is None and back.item_ids is None and back.extras == {} and back.history == []


def test_model_module_exports_the_serving_names():
    from fastpu import model as model_mod

    assert set(model_mod.__all__) == {"ApproximateIndex", "Factorization", "fold_in",
                                      "load_model", "partial_fit_items", "partial_fit_users",
                                      "recommend", "similar_items", "similar_users"}
    for name in ("load_model", "recommend", "similar_items", "similar_users"):
        doc = getattr(model_mod, name).__doc__
        assert all(s in doc for s in ("Parameters", "Returns", "Raises", "Examples")), name


def test_repr_is_short_and_names_the_key_fields():
    # print(model) used to dump every factor, history entry and param (~16 KB)
    rng = np.random.default_rng(0)
    model = fp.Factorization(rng.normal(size=(100, 8)), rng.normal(size=(50, 8)).astype(np.float32),
                             history=[{"iter": t, "objective": 1.0, "seconds": 0.1} for t in range(30)],
                             params={"lam": 1.0, "big": np.ones(1000)}, method="ocmf",
                             extras={"W": np.ones((6, 8)), "H": np.ones((4, 8))},
                             user_ids=np.arange(100), item_ids=np.arange(50))
    text = repr(model)
    assert len(text) < 500 and "\n" not in text and str(model) == text
    for part in ("Factorization(", "method='ocmf'", "100 users × 50 items", "k=8", "dtype=float64",
                 "history=30 entries", "ids=yes", "extras=['H', 'W']"):
        assert part in text, (part, text)
    assert "ids=no" in repr(_model()) and "extras=[]" in repr(_model())
    # dataclass equality is unchanged (field by field)
    import dataclasses
    assert model == dataclasses.replace(model) and model != dataclasses.replace(model, method="x")


def test_subclass_repr_is_short_too():
    Y = fp.datasets.synthetic(100, 50, rank=3, density=0.15, seed=0).Y
    model = fp.csrr.fit(Y, variant="I", n_iter=2)
    text = repr(model)
    assert len(text) < 500 and text.startswith("CSRRModel(method='csrr', 100 users × 50 items")
    assert "U=<ndarray 100×50>" in text and "V=<csr_array 100×50>" in text and "variant='I'" in text


def test_one_name_reads_a_model_file(tmp_path):
    """load_model is the one reader of model files; fastpu.load (a name datasets.load shadows in
    readers' minds) does not exist."""
    model = _model(5, 4)
    model.save(tmp_path / "m.npz")
    np.testing.assert_array_equal(fp.load_model(tmp_path / "m.npz").user_factors, model.user_factors)
    assert fp.model.load_model is fp.load_model
    assert not hasattr(fp, "load") and "load" not in fp.__all__ and "load" not in fp.model.__all__
