"""CSRR: robust cost-sensitive low-rank + sparse recommendation (Yang, Zhao, Gao, Liu, Section IV).

The binarised user × item matrix A (A_ij = 1 on the observed positives Ω+, 0 elsewhere) is
fitted by X = U + V, U low rank, V sparse, both in [0, 1], under a cost-sensitive square loss:

    min_{0 ≤ U, V ≤ 1}  λ1 ‖U‖_* + λ2 ‖V‖₁ + Σ_ij ℓ(U_ij + V_ij, A_ij)               (10)

    ℓ^I (x, a)  = α·[a = 1]·½(x − 1)² + [a = 0]·½x²                                  (5)
    ℓ^II(x, a)  =   [a = 1]·½(x − α)² + [a = 0]·½x²                                  (6)

Variants
--------
``"I"`` / ``"II"`` (Algorithm 1): accelerated proximal gradient (:func:`fastpu.optim.apg`).
Each iteration takes one gradient step on U and V with the same ∂ℓ/∂X, thresholds U's
singular values at ηλ1 (16, :func:`fastpu.optim.svt_factors`, a truncated SVD that stops at
the threshold), soft-thresholds V at ηλ2 (17), and moves to the momentum point projected
onto [0, 1] (18). U is a dense users × items matrix: these variants refuse above
``dense_limit`` entries (default :data:`fastpu._core.validation.DENSE_LIMIT`, 25 million, which
admits MovieLens-1M) and point to variant ``"e"``.

``"e"`` (Algorithm 2, CSRR-e): U = P Qᵀ with P (users × k) and Q (items × k) in
[0, 1/√k], so that every entry of U is in [0, 1]; λ1‖U‖_* is replaced by its bilinear
form λ1/2 (‖P‖²_F + ‖Q‖²_F) (Theorem 2). P and Q take projected gradient steps with the
shrink 1/(1 + ηλ1) of (23), then V takes the step (17). The square term over all m×n
entries comes from the k×k Gram matrices PᵀP and QᵀQ, so an iteration costs
O(|Ω+|k + (m + n)k²) time and O(|Ω+| + (m + n)k) memory.

Where this implementation is more precise than the text
--------------------------------------------------------
* V is kept exactly zero off Ω+ and stored as a CSR on Ω+. Off Ω+ the gradient is
  X = U ≥ 0, so the gradient step pushes V below zero there; soft-thresholding (17) alone
  would leave −η(U − λ2)₊ < 0, which the momentum step (18) can then push above zero.
  We therefore take V's proximal step with its box: Ṽ = clip(K(V̂, ηλ2), 0, 1), the exact
  proximal map of λ2‖V‖₁ + [0 ≤ V ≤ 1] (entrywise, so clipping the soft-threshold is
  exact). It is zero wherever V̂ ≤ 0, hence on every unobserved entry.
* The objective recorded for ``"I"``/``"II"`` is (10) at the proximal iterate (Ũ, Ṽ), whose
  nuclear norm is the sum of the thresholded singular values; Ũ may leave the box slightly,
  which the history reports as ``box_violation``. The returned model is the paper's
  output X^T = U^T + V^T (the projected momentum point, inside the box).
* The default step is the inverse Lipschitz constant of the smooth part: η = 1/(2c) for
  I/II (c = max(α, 1) for ℓ^I, 1 for ℓ^II; the loss couples U and V); for ``"e"`` each
  block gets its own 1/L (c·λ_max(QᵀQ) for P, c·λ_max(PᵀP) for Q, c for V) and the blocks
  are updated in turn (P, then Q, then V), which makes the objective non-increasing.
  Passing ``eta`` uses that single step everywhere, as in the paper.
* Ratings are binarised: every stored entry with a positive value is a positive.
"""

from ._fit import CSRRModel, INNER_CAP, demo_configs, fit, objective  # noqa: F401

__all__ = ['CSRRModel', 'INNER_CAP', 'demo_configs', 'fit', 'objective']
