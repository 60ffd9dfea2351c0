"""Warnings and errors of fastpu's own.

:class:`ConvergenceWarning` is what a ``fit`` emits when it returns a model that did not
learn: the objective grew past its starting value (the iteration diverged), or every score
of the returned model is zero. The message says which argument to change. Filter it as usual::

    import warnings, fastpu
    warnings.simplefilter("error", fastpu.ConvergenceWarning)   # make it an exception

:func:`user_stacklevel` is the ``stacklevel`` fastpu's warnings pass, so that a warning points at
the user's own line.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ConvergenceWarning", "user_stacklevel"]


class ConvergenceWarning(UserWarning):
    """A fit ended without converging to a useful model (diverged, or all-zero factors).

    Examples
    --------
    >>> import warnings
    >>> from fastpu import ConvergenceWarning
    >>> issubclass(ConvergenceWarning, UserWarning)
    True
    """


def user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside fastpu (the user's
    call), however many of fastpu's wrappers lie between (as pandas' ``find_stack_level``)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame = frame.f_back
        level += 1
    return level
