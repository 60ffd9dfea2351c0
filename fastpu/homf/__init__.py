"""HOMF: higher-order matrix factorization of random-walk polynomials (Shah, Rao, Ding).

Users and items become the ``N = m + n`` nodes of one graph (equation (3)): rating
edges weighted by ``(1 - alpha) g(R)``, optional user-user and item-item side graphs
weighted by ``alpha g(S)``.  ``A`` is its row-normalised transition matrix and

    f_T(A) = (A + A² + ... + A^T) / T

the probability of a T-step walk landing on a node, averaged over the steps.  HOMF
learns U, V ∈ R^{N×k} minimising the objective (4)

    ½ ‖P_Ω(f_T(A) − U Vᵀ)‖²_F + λ (‖U‖²_F + ‖V‖²_F)

by alternating ridge regressions, one per column (then per row) of f_T(A):
``(U_Ωᵀ U_Ω + 2λ I) v = U_Ωᵀ x_Ω`` (the 2 that equation (6) hides comes from the ½).
``mode="exact"`` takes Ω = the nonzeros of f_T(A), as in the paper; the columns are
built block by block with the recursion of Algorithm 1 and never stored whole.
``mode="dense"`` treats every node pair as observed, so each half-step is one shared
k×k system and f_T(A)ᵀ U = (1/T) Σ_l (Aᵀ)^l U, which costs T sparse × (N×k) products.

The score of user i for item j is ``u_i · v_{m+j}``: the result's ``user_factors``
are ``U[:m]`` and its ``item_factors`` are ``V[m:]``.
"""

#: Largest N² (N = users + items) for which mode="exact" and :func:`objective` run. Both walk
#: every column of f_T(A) as a dense N-vector, so a half-iteration touches N² entries whatever
#: the number of positives: about 18 s per iteration at N² ≈ 1e8 (MovieLens-1M, 2 cores), hence
#: half an hour or more per iteration above this limit. Raise it (``fastpu.homf.EXACT_LIMIT =
#: ...``) to run such a pass anyway; mode="dense" costs O(T·nnz(A)·k + N k²) instead.
EXACT_LIMIT = 10**10

from ._fit import demo_configs, fit, objective, transition_matrix, walk_columns, walk_rows  # noqa: E402

__all__ = ['EXACT_LIMIT', 'transition_matrix', 'walk_columns', 'walk_rows', 'objective', 'fit',
           'demo_configs']
