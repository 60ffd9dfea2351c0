"""Kernels of fBGD's tensor models (Yuan et al., Appendix A): pair embeddings and their chain rule.

A row r of the data is one (x, h) pair, x = ``px[r]`` and h = ``ph[r]``; ``VX`` (|X|×f) and
``VH`` (|H|×f) hold the parameters v^X, v^H.  The pair embedding p_r is

- CP (eq. 28, g = f):       p_r,d = v^X_x,d · v^H_h,d;
- PITF (eq. 26, g = f + 1): p_r,d = v^X_x,d + v^H_h,d (d < f),  p_r,f = Σ_d v^X_x,d v^H_h,d

(0-based d here, so the paper's coordinate f + 1 is index f).  The loss reaches v^X and v^H
only through the rows of P, so ∂J/∂v^X_x = Σ_{r: x_r = x} (∂p_r/∂v^X_x)ᵀ ∂J/∂p_r, a sum over
the pairs of x that is local to them; likewise for v^H.  No kernel validates its input;
``prange`` runs over rows (pairs, or groups of pairs) that own their outputs.
"""

import numba as nb

_JIT = dict(nogil=True, cache=True)


@nb.njit(parallel=True, **_JIT)
def pair_embed(px, ph, VX, VH, pitf, P_out):
    """P_out[r] = the pair embedding of (px[r], ph[r]) (eq. 26 when ``pitf``, else eq. 28)."""
    f = VX.shape[1]
    for r in nb.prange(px.shape[0]):
        x = px[r]
        h = ph[r]
        if pitf:
            acc = 0.0
            for d in range(f):
                a = VX[x, d]
                b = VH[h, d]
                P_out[r, d] = a + b
                acc += a * b
            P_out[r, f] = acc
        else:
            for d in range(f):
                P_out[r, d] = VX[x, d] * VH[h, d]


@nb.njit(parallel=True, **_JIT)
def pair_chain(indptr, rows, other, G, Vother, pitf, out):
    """out[i] = Σ_{r in group i} (∂p_r/∂v_i)ᵀ G[r]: the chain rule from ∂J/∂P to one factor.

    Group i lists the pairs ``rows[indptr[i]:indptr[i+1]]`` that use v_i (the pairs of one x,
    or of one h); ``other[r]`` is the pair's index into the other factor ``Vother``.  CP:
    ∂p_r,d/∂v_i,d = v^other_d.  PITF: ∂p_r,d/∂v_i,d = 1 and ∂p_r,f/∂v_i,d = v^other_d.
    The roles of x and h are symmetric, so one kernel serves both.
    """
    f = out.shape[1]
    for i in nb.prange(out.shape[0]):
        for d in range(f):
            out[i, d] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            r = rows[t]
            o = other[r]
            if pitf:
                gl = G[r, f]
                for d in range(f):
                    out[i, d] += G[r, d] + gl * Vother[o, d]
            else:
                for d in range(f):
                    out[i, d] += G[r, d] * Vother[o, d]
