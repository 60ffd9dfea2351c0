"""fastpu's core: what every other part of the package stands on.

- :mod:`.validation` — the boundary: every public function's inputs are checked and put into
  canonical form here (and nowhere below);
- :mod:`.memory` — the memory guard: how much one call may allocate, checked before numpy tries;
- :mod:`.files` — regular files only, and ``.npz`` archives checked before numpy reads them;
- :mod:`.names` — did-you-mean suggestions for unknown keywords, and a function's public name;
- :mod:`.threads` — the one place that changes numba's and BLAS's thread counts;
- :mod:`.progress` — per-iteration history, verbose lines, callbacks, convergence warnings;
- :mod:`.cache` — where numba caches compiled kernels (per user, never in the package);
- :mod:`.factorization` — :class:`Factorization`, the result type of every fit;
- :mod:`.dataset` — :class:`Dataset`, a matrix with its ids and side information;
- :mod:`.registry` — the one list of methods and where each method's parts live;
- :mod:`.hints`, :mod:`.exceptions`, :mod:`.version`.

Nothing here imports a method, the serving or the selection code (the registry names them
by their dotted paths and imports them on first use).
"""
