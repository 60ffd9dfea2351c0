"""Other libraries' interfaces over fastpu's models, for code written against them.

- :mod:`fastpu.compat.implicit` — implicit's ``RecommenderBase`` (``fit``, ``recommend``,
  ``similar_items``, ``similar_users``, ``partial_fit_users`` / ``partial_fit_items``,
  ``save`` / ``load``, pickling) over any fastpu model, with implicit's conventions.

These classes call fastpu's public functions only; they rank and filter nothing themselves.
"""

__all__ = ["implicit"]
