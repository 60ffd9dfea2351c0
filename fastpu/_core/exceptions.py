"""Warnings and errors of fastpu's own.

:class:`ConvergenceWarning` is what a ``fit`` emits when it returns a model that did not
learn: the objective grew past its starting value (the iteration diverged), or every score
of the returned model is zero. The message says which argument to change. Filter it as usual::

    import warnings, fastpu
    warnings.simplefilter("error", fastpu.ConvergenceWarning)   # make it an exception
"""

from __future__ import annotations

__all__ = ["ConvergenceWarning"]


class ConvergenceWarning(UserWarning):
    """A fit ended without converging to a useful model (diverged, or all-zero factors).

    Examples
    --------
    >>> import warnings
    >>> from fastpu import ConvergenceWarning
    >>> issubclass(ConvergenceWarning, UserWarning)
    True
    """
