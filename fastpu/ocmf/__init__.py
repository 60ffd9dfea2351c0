"""One-class structured matrix factorization with side information (Yu, Huang, Dhillon, Lin).

Scores are s_ij = x_iᵀ W h_j, more generally b_i · e_j with B = XW and E = ZH
(X = I or Z = I when a side has no features). The Full objective is

    f(W, H) = Σ_{Ω+} C_ij l(1, s_ij) + Σ_{(i,j) ∉ Ω+} p_i q_j (ā - s_ij)²
              + λ_w (‖W‖² + λ_g tr(Bᵀ L_u B)) + λ_h (‖H‖² + λ_g tr(Eᵀ L_v E)),

where C_ij are the stored values of Y, L = D - S are graph Laplacians (λ_w = λ_h = ``lam``
unless ``lam_w`` / ``lam_h`` are given) and the
unlabeled weight is p_i q_j (``rho`` times the given ``p`` and ``q``). It is
minimised by alternating over W and H; each sub-problem costs
O(nnz(X)k + |Ω+|k + nnz(L)k + mk² + dk) per function, gradient or
Hessian-vector product (Algorithms 1–3 of the paper), never O(mn).

Paper formulations and their parameters:

============  ==========================================================
SQ-SQ         ``loss="square", rho=1, a_bar=0`` (LEML / GRALS)
SQ-wSQ        ``loss="square", rho<1``
LR-wSQ        ``loss="logistic", rho<1`` (``a_bar=-1``, the default)
SH-wSQ        ``loss="squared_hinge", rho<1``
LR-wLR        ``loss="logistic", negatives="full_logistic"`` (dense, small data)
Subsampled    ``negatives="sampled", neg_ratio=r`` (loss on Ω+ and r·|Ω+| sampled entries)
============  ==========================================================
"""

from ._fit import LOSSES, NEGATIVES, NystromMap, SOLVERS, SubProblem, demo_configs, fit, nystrom_features, objective  # noqa: F401

__all__ = ['fit', 'objective', 'nystrom_features', 'NystromMap', 'demo_configs', 'LOSSES', 'NEGATIVES', 'SOLVERS', 'SubProblem']
