"""Names in messages: what a user may have meant by an unknown keyword, and how a user calls a
function.

:func:`did_you_mean` suggests fastpu's name for another library's spelling
(:data:`SYNONYMS`: ``iterations`` → ``n_iter``) or the closest spelling among the names a
function takes (:func:`fit_names`); :func:`public_where` is the name a message gives a
function (``ocmf.fit``).
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any, Callable, Collection

__all__ = ["SYNONYMS", "did_you_mean", "fit_names", "public_where"]


def fit_names(fit: Callable[..., Any]) -> set[str] | None:
    """The keyword names ``fit`` takes besides ``Y``; ``None`` when it takes ``**kwargs``.

    A fit that passes ``**kwargs`` on (``baselines.wrmf``) can declare the full set as its
    ``keyword_names`` attribute.
    """
    declared = getattr(fit, "keyword_names", None)
    if declared is not None:
        return set(declared)
    params = inspect.signature(fit).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return set(params) - {"Y"}


def public_where(fn: Callable[..., Any]) -> str:
    """How a user calls ``fn``: ``ocmf.fit`` for ``fastpu.ocmf._fit.fit`` (the method package and
    the function), the bare name otherwise (``wrmf``)."""
    fn = inspect.unwrap(fn)
    parts = [p for p in getattr(fn, "__module__", "").split(".") if not p.startswith("_")]
    if parts[:1] == ["fastpu"] and len(parts) > 1 and parts[1] not in ("model_selection",):
        return f"{parts[1]}.{fn.__name__}"
    return getattr(fn, "__name__", "fit")


#: What other libraries (implicit, scikit-learn, LightFM, PyTorch) call fastpu's parameters:
#: their name suggests fastpu's before any spelling match does.
SYNONYMS = {
    **dict.fromkeys(("iterations", "n_iterations", "max_iter", "epochs", "n_epochs", "num_epochs",
                     "niter"), "n_iter"),
    **dict.fromkeys(("regularization", "regularisation", "reg", "l2", "l2_reg", "weight_decay",
                     "lambda", "lambda_", "lmbda", "alpha_reg"), "lam"),
    **dict.fromkeys(("factors", "n_factors", "num_factors", "n_components", "rank", "dim",
                     "embedding_dim", "no_components"), "k"),
    **dict.fromkeys(("learning_rate", "eta0"), "lr"),
    **dict.fromkeys(("num_threads", "n_jobs"), "n_threads"),
    "random_state": "seed",
    "show_progress": "verbose",
}


def did_you_mean(key: str, names: Collection[str]) -> str:
    """`` (did you mean 'x'?)`` for what ``key`` means among ``names``: its fastpu name when it is
    another library's (:data:`SYNONYMS`), else the closest spelling, else ``""``."""
    alias = SYNONYMS.get(key)
    if alias is not None and alias in names:
        return f" (did you mean {alias!r}?)"
    close = difflib.get_close_matches(key, sorted(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
