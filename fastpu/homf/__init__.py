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

from ._fit import demo_configs, fit, objective, transition_matrix, walk_columns, walk_rows  # noqa: F401

__all__ = ['transition_matrix', 'walk_columns', 'walk_rows', 'objective', 'fit', 'demo_configs']
