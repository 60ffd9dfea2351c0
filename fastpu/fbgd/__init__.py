"""fBGD: all-sample batch gradient learning of dot-product embeddings from PU data.

The method of Yuan et al. (paper 001 in ``shared/papers``).  The score of a pair is a
dot product r̂_xy = p_x · q_y of g-dimensional embeddings built linearly from sparse
features (SVDFeature, eq. 11-13)::

    p_x = z_x^X Θ^X,   q_y = z_y^Y Θ^Y.

Without features z is the one-hot id and this is plain matrix factorisation.  With
``biases`` the embeddings gain two columns (g = f + 2): p_x,f+1 = w0 + Σ_j w_j z_xj
against q_y,f+1 = 1, and p_x,f+2 = 1 against q_y,f+2 = Σ_j w'_j z_yj.

The loss (eq. 2) weighs every unlabeled pair::

    J = Σ_P α⁺_xy (r⁺ − r̂_xy)² + Σ_U α⁻_y (r⁻ − r̂_xy)²  (+ lam ‖Θ‖², 0 in the paper)

(with ``nu`` > 0 the penalty is frequency-scaled: lam (|P_x| + α⁻_x Σ_y α⁻_y)^ν on user x's
row of Θ^X, lam (|P_y| + α⁻_y Σ_x α⁻_x)^ν on item y's row of Θ^Y; plain ids only)

and is evaluated as an all-pairs term, which needs only the g×g caches
S^q = Qᵀ diag(α⁻) Q, s^q = Qᵀ α⁻ (and S^p = PᵀP, s^p = Pᵀ1 for the item side,
weighted by α⁻_x when row weights are given), plus a correction on the positives, so
an epoch costs O((N(Z^X) + N(Z^Y)) g² + |P| g) and nothing of size |X|·|Y| is ever
formed.  Parameters are updated with Adagrad (eq. 24) either coordinate by coordinate as
in Appendix B (``update="coordinate"``) or all at once per side from the full gradient,
in parallel (``update="batch"``).

The tensor models of Appendix A (PITF, eq. 25-26, and rank-f CP, eq. 27-28) over
(x, h) pairs × y are :func:`fit_tensor` (module ``_tensor``).  Their pair
embeddings p_xh are not linear in the parameters (p_xh,d = v^X_x,d v^H_h,d for CP), but
the loss still depends on the parameters only through the rows of P and Q: the same
caches give ∂J/∂p_xh in O(g²) per pair, and the chain rule to v^X and v^H is local to the
pairs of each x and each h.

Both weights of the unlabeled pairs that keep the cached form are available: α⁻_y
(``neg_weights``, eq. 22) and α⁻_x (``neg_row_weights``); the pair (x, y) weighs
α⁻_x α⁻_y, and S^p = Pᵀ diag(α⁻_x) P, s^p = Pᵀ α⁻_x.

``fit(..., init=(P0, Q0))`` starts from given parameters instead of random ones: the embeddings
for plain MF, the parameter matrices Θ^X, Θ^Y with features or biases (:func:`parameters`
gives them for a fitted model), so that a fit can go on from where another stopped.
"""

from ._fit import demo_configs, fit, negative_weights, objective, parameters
from ._tensor import fit_tensor, pair_model, tensor_objective, triples_to_pairs

__all__ = ['demo_configs', 'fit', 'fit_tensor', 'negative_weights', 'objective', 'pair_model',
           'parameters', 'tensor_objective', 'triples_to_pairs']
