"""datasets.from_pairs(df): column names given or guessed."""

import numpy as np
import pytest

import fastpu as fp

pd = pytest.importorskip("pandas")


@pytest.mark.parametrize("names", [("user", "item", "value"), ("userId", "movieId", "rating"),
                                   ("customer_id", "SKU", "quantity"), ("UID", "iid", "count")])
def test_guessed_columns(names):
    u, i, v = names
    df = pd.DataFrame({"when": [3, 2, 1], u: ["x", "y", "x"], i: [7, 8, 9], v: [1.0, 2.0, 3.0]})
    data = fp.datasets.from_pairs(df)
    ref = fp.datasets.from_pairs(["x", "y", "x"], [7, 8, 9], [1.0, 2.0, 3.0])
    assert (data.Y != ref.Y).nnz == 0
    assert data.user_ids.tolist() == ["x", "y"] and data.item_ids.tolist() == [7, 8, 9]


def test_named_and_positional_columns():
    df = pd.DataFrame({"a": ["x", "y"], "b": [1, 2], "c": [2.0, 3.0]})
    np.testing.assert_array_equal(fp.datasets.from_pairs(df).Y.toarray(), [[2.0, 0], [0, 3.0]])
    named = fp.datasets.from_pairs(df, user="b", item="a")
    assert named.user_ids.tolist() == [1, 2] and named.Y.nnz == 2 and named.Y.data.tolist() == [1.0, 1.0]
    assert fp.datasets.from_pairs(df[["a", "b"]]).Y.data.tolist() == [1.0, 1.0]


def test_errors_name_the_columns():
    df = pd.DataFrame({"p": [1], "q": [2], "r": [3], "s": [4]})
    with pytest.raises(ValueError, match=r"cannot tell the user and item column of the DataFrame "
                                         r"from its names \['p', 'q', 'r', 's'\]"):
        fp.datasets.from_pairs(df)
    with pytest.raises(ValueError, match=r"user='nope' is not a column of the DataFrame"):
        fp.datasets.from_pairs(df, user="nope", item="p")
    with pytest.raises(TypeError, match="takes the DataFrame alone"):
        fp.datasets.from_pairs(df, ["x"])
    with pytest.raises(TypeError, match="from_pairs: user=, item=, value= name the columns"):
        fp.datasets.from_pairs([1], [2], user="u")
    with pytest.raises(TypeError, match=r"items must be a 1-d sequence of ids .*got None: "
                                        r"from_pairs\(users, items\[, values\]\) takes"):
        fp.datasets.from_pairs([1, 2])
