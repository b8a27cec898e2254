"""The spikes of ``P`` coupled to the batch's most extreme samples (docs/theory/two_step.md §8.3, "Spikes of P and
extreme samples together").

The widened bulk of the finite-``N`` route leaves out the ``K`` most extreme samples of a typical batch; each of
them is a column of ``W_2`` (the direction ``x_i / |x_i|``) with its own variance profile ``v_ij``.  The right vectors
of ``P`` are sums over samples, ``X^T c / n``, so they have a component ``u_i = c_i sqrt(d) / n`` along each such
column -- large, since ``c_i`` grows with ``y_i``.  Taken together, ``P`` and the ``K`` columns are one
rank-``(r + K)`` perturbation of the bulk.  With ``R = Phi_A^{1/2}`` (the ``N``-side Gram of ``P`` weighted by the
row kernel), ``G(x)`` the right Gram of ``P`` without those samples' share weighted by the mean column kernel, and
``D_i(x) = 1 - psi E_j[v_ij tau_j(x)]`` the column denominator of sample ``i``, the outliers are the ``x = s^2``
where the symmetric matrix

    J(x) = [[I - x R G R,  R U],
            [U^T R,        diag(D_i)]]

is singular (Schur complement: ``det J = prod D_i det(I - x R (G + sum_i u_i u_i^T / (x D_i)) R)``).  Any factor ``F``
with ``F^T F = Phi_A`` in place of ``R`` gives the same eigenvalues wherever they can change sign (``F = Q R`` with
``Q`` orthogonal conjugates ``J``): the blocks use ``F = diag(sqrt(w)) C`` of
:class:`~rmtfl.theory._two_step.left_gram.WeightedGram`, no eigensolver, and one row fewer (``Phi_A`` is singular; its
null direction only adds an eigenvalue ``1`` to ``J``).  Far above the bulk ``J -> I``; each eigenvalue that turns
negative as ``x`` comes down is an outlier.  Its null vector says what it is: mostly in the first block, a spike of
``P`` (lifted by the samples it leans on); mostly in the second, a single-sample outlier (reported by the order
statistics of :mod:`.sample_order` instead).  With the batch's most extreme sample placed at quantiles of its law, the
roots averaged rank by rank give the means of the ranks the spikes hold (:func:`ranks_over_top_sample`): where that
sample comes near a spike the two repel.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize

from .sample_spikes import extreme_eigenvalues, sample_strengths, typical_extremes, y_law_truncated

__all__ = ["ExtremeColumns", "JointProblem", "extreme_columns", "spike_roots", "ranks_over_top_sample",
           "top_sample_places", "top_quantile_rule", "TOP_QUANTILES"]

#: Quantiles of the most extreme sample's outlier location averaged over by :func:`ranks_over_top_sample`, placed by
#: :func:`top_quantile_rule` (the ranks' means within 0.2 % of 48 of them at the heaviest points,
#: docs/theory/two_step.md §8.3).
TOP_QUANTILES = 6

#: Relative precision of the roots averaged by :func:`ranks_over_top_sample` (well below the 0.2 % of its quadrature).
ROOT_RTOL = 1e-4

#: ... and of the single-sample ranks below the ``precise`` ones there (the secant usually stops well within it).
COARSE_RTOL = 3e-3


@dataclasses.dataclass(frozen=True)
class ExtremeColumns:
    """The ``K`` most extreme samples of a typical batch as columns: variance ``V`` (``K x rows``) and the
    components ``U`` (``(Q + 1) x K``) of the right vectors of ``P`` along them."""

    V: np.ndarray
    U: np.ndarray


def extreme_columns(act, target, st, bulk, *, eta1, eta2, N, psi, K, coupling, rho=None,
                    eigenvalue=None) -> ExtremeColumns | None:
    """The ``K`` most extreme samples of a typical batch (each batch of a fresh pair), at the ``(k - 1/2)/n``
    quantiles of the law of ``|y|``, ``k = 1..K``: their column variances in the rows of ``bulk`` and
    ``U = coupling(ys, zs, which)`` (``which``: ``"both"``, ``"first"`` or ``"second"``, as in
    :func:`~rmtfl.theory._two_step.sample_spikes.sample_strengths`, with ``rho`` as there), ``M``'s eigenvalue along
    each from ``eigenvalue(ys, zs, phi_b, y_bulk, w_bulk)`` (default: the pole over the bulk's samples,
    :func:`~rmtfl.theory._two_step.sample_spikes.extreme_eigenvalues`); ``None`` when the bulk keeps every sample."""
    if bulk.zrange is None or K == 0:
        return None
    d = N / psi
    yb, wb = y_law_truncated(target, bulk.zrange)
    r_rows = bulk.functions(bulk.a)[:, 5]
    names = [("both", st.phi)] if st.batch == "reused" else [("first", st.phi), ("second", st.phi2)]
    V, U = [], []
    samples = {}        # by batch: fresh batches of one size share their typical extremes
    for which, phi_b in names:
        if phi_b not in samples:
            ys, zs = typical_extremes(target, max(int(round(phi_b * d)), 1), K)
            lams = (extreme_eigenvalues(ys, zs, phi_b, yb, wb, bulk.zrange) if eigenvalue is None
                    else list(eigenvalue(ys, zs, phi_b, yb, wb)))
            samples[phi_b] = ys, zs, lams
        ys, zs, lams = samples[phi_b]
        _, rws = sample_strengths(act, st, ys=ys, zs=zs, eta1=eta1, eta2=eta2, N=N, d=d, g=bulk.a * math.sqrt(N),
                                  wg=bulk.wa, which=which, lams=lams, rho=rho)
        V.extend(1.0 + r_rows + ex for ex in rws)
        U.append(np.asarray(coupling(ys, zs, which), dtype=float))
    return ExtremeColumns(np.array(V), np.hstack(U))


class JointProblem:
    """``J(x)`` of the module docstring, its ``x``-dependent blocks cached, for several calibrations of the columns."""

    def __init__(self, bulk, cols: ExtremeColumns, G_U_w, G_V, g, N, *, _kernels=None):
        self.bulk, self.cols, self.G_U_w, self.G_V, self.g, self.N = bulk, cols, G_U_w, G_V, g, N
        C = G_U_w.C                     # the factor of P's N-side Gram is diag(sqrt(w(x))) C (module docstring)
        self.r = C.shape[0]             # P's block of J
        self._cache = {}
        # the bulk's kernels at each x (sqrt(w) and the column denominators), shared by the problems of :meth:`given`
        self._kernels = {} if _kernels is None else _kernels
        # the same at every x: the rows the kernels are read at (P's nodes, then the bulk's, for the columns'
        # denominators), the columns' weights over the bulk's rows, and P's right Gram less the extreme samples'
        # share between the factor's constant parts
        self._rows = np.concatenate([g / math.sqrt(N), bulk.a])
        self._Vw = bulk.red.psi * cols.V * bulk.wa[None, :]
        M = C @ (G_V - cols.U @ cols.U.T) @ C.T
        self._M, self._CU = (M + M.T) / 2, C @ cols.U
        self._J = np.zeros((self.r + cols.U.shape[1],) * 2)       # J's buffer, filled at each x
        self._eye = np.eye(self.r)
        self._diag = (np.arange(self.r, self._J.shape[0]),) * 2      # the columns' diagonal in J (zero off it)

    def given(self, G_V, U=None) -> "JointProblem":
        """The same problem with ``P``'s right Gram ``G_V`` (and the columns' components ``U``) of another batch: the
        bulk's kernels at each ``x`` are computed once for all of them."""
        cols = self.cols if U is None else dataclasses.replace(self.cols, U=U)
        return JointProblem(self.bulk, cols, self.G_U_w, G_V, self.g, self.N, _kernels=self._kernels)

    def blocks(self, s):
        """``(A, B, D)`` at ``x = s^2``: ``A = I - x F G F^T``, ``B = F U``, ``D`` the column denominators (``F``:
        the factor of the module docstring)."""
        if s not in self._cache:
            if s not in self._kernels:
                x = s * s
                t, ttm = self.bulk.tau_rows(self._rows, x)
                if t is None:
                    self._kernels[s] = None
                else:
                    Q = self.g.size
                    self._kernels[s] = (x * ttm, np.sqrt(self.G_U_w.weights(t[:Q])), 1.0 - self._Vw @ t[Q:])
            k = self._kernels[s]
            if k is None:
                self._cache[s] = None
            else:
                xt, rho, D = k
                A = self._eye - xt * (rho[:, None] * rho * self._M)           # symmetric: both factors are
                self._cache[s] = (A, rho[:, None] * self._CU, D)
        return self._cache[s]

    def denominators(self, s):
        b = self.blocks(s)
        return None if b is None else b[2]

    def eig(self, s, shift, vectors=False):
        b = self.blocks(s)
        if b is None:
            return None
        A, B, D = b
        r, J = self.r, self._J
        J[:r, :r], J[:r, r:], J[r:, :r] = A, B, B.T
        J[self._diag] = D - shift
        return np.linalg.eigh(J) if vectors else np.linalg.eigvalsh(J)

    def coupling(self, s):
        """``sum_i |R u_i|^2 / D_i`` at ``x = s^2`` (``inf`` when a column is at or past its threshold there): how much
        the extreme columns can move the spikes of ``P``."""
        b = self.blocks(s)
        if b is None:
            raise RuntimeError(f"no resolvent kernel of the finite-N bulk at s = {s:.6g}")
        _, B, D = b
        return float(np.sum(np.sum(B * B, axis=0) / D)) if np.all(D > 0) else math.inf

    def roots(self, s_lo, s_hi, shift, *, refine, points=10, rtol=1e-10, weights=True, coarse=None, guesses=None,
              slopes=None):
        """``[(s, weight of P's block in the null vector), ...]`` of every root above ``s_lo``, largest first.

        Roots are bracketed on a grid geometric in ``s - s_lo`` and placed by linear interpolation of the eigenvalue;
        ``refine(roots)`` names the indices to solve to relative precision ``rtol`` (Brent).  ``weights=False``:
        the weights are not computed (``None``), and ``refine`` sees ``(s, None)`` pairs.  ``coarse = (first,
        rtol_c)``: the roots from index ``first`` on are solved to ``rtol_c`` instead.  ``guesses``, ``slopes``: the
        roots and the slopes of ``J``'s eigenvalues there in another calibration of the same problem, by index (a
        list and a dict; ``slopes`` receives this one's)."""
        hi = max(s_hi, 1.01 * s_lo)
        for _ in range(40):
            e = self.eig(hi, shift)
            if e is not None and e[0] > 0:
                break
            hi *= 2
        # roots closer to the edge than 1e-5 of it are far inside the count rule's margin at any width
        grid = s_lo + (hi - s_lo) * np.geomspace(min(1e-5 * s_lo / (hi - s_lo), 0.1), 1.0, points)[::-1]
        ev = [self.eig(s, shift) for s in grid]
        if any(e is None for e in ev):
            raise RuntimeError("no resolvent kernel of the finite-N bulk between its edge and the spikes of P")
        ev = np.array(ev)
        brackets = []
        for k in range(ev.shape[1]):
            neg = np.nonzero(~(ev[:, k] >= 0))[0]
            if neg.size == 0 or neg[0] == 0:
                break
            j = neg[0]
            e0, e1 = ev[j - 1, k], ev[j, k]
            s0 = grid[j - 1] + (grid[j] - grid[j - 1]) * (e0 / (e0 - e1) if np.isfinite(e1) else 1.0)
            if guesses is not None and k < len(guesses) and grid[j] < guesses[k] < grid[j - 1]:
                s0 = guesses[k]             # a root known nearby (another calibration of the same problem)
            brackets.append((k, grid[j], grid[j - 1], s0))

        def weight(s):
            e = self.eig(s, shift, vectors=True)
            if e is None:
                raise RuntimeError(f"no resolvent kernel of the finite-N bulk at s = {s:.6g}")
            lv, qv = e
            v = qv[:, int(np.argmin(np.abs(lv)))]
            return float(v[:self.r] @ v[:self.r])
        out = [(s0, weight(s0) if weights else None) for _, _, _, s0 in brackets]
        for i in refine(out):
            k, lo, up, s0 = brackets[i]

            def f(s, k=k):
                e = self.eig(s, shift)
                return e[k] if e is not None else -1.0
            tol = rtol if coarse is None or i < coarse[0] else coarse[1]
            out_slope = []
            s = bracketed_secant(f, lo, up, s0, xtol=tol * up, slope=None if slopes is None else slopes.get(k),
                                 slope_out=out_slope)
            if slopes is not None and out_slope:
                slopes[k] = out_slope[0]
            out[i] = (float(s), weight(s) if weights else None)
        return out


def bracketed_secant(f, lo: float, up: float, guess: float, *, xtol: float, maxiter: int = 60,
                     slope: float | None = None, slope_out: list | None = None) -> float:
    """The root of ``f`` in ``[lo, up]`` (``f(lo) < 0 < f(up)``) from ``guess``: secant steps through the latest two
    points (the first through the guess and the bracket's end across the root, or along ``slope`` where given), a
    bisection of the current bracket wherever a step would leave it or three steps have not halved it.

    The eigenvalues of ``J`` are smooth in ``s``: from the interpolated guess of :meth:`JointProblem.roots` the
    secant converges superlinearly, in about half the evaluations of Brent's method, which shrinks the bracket
    from both sides.  It stops when a step is below ``xtol`` (converging superlinearly, the root is then far
    closer than that) or the bracket is narrower than ``xtol``.  ``slope``: ``f'`` near the root, known from a
    nearby problem (its first step is then Newton's, and a guess within ``xtol`` costs one evaluation);
    ``slope_out``: a list that receives the slope of the last step."""
    a, b = lo, up
    x = min(max(guess, a), b)
    fx = f(x)
    if slope is not None and slope > 0 and math.isfinite(slope):
        px, pf = x + 1.0, fx + slope            # a point on the line of that slope
    else:
        px, pf = (a, f(a)) if fx > 0 else (b, f(b))
    width = b - a
    for it in range(maxiter):
        if fx == 0.0:
            return float(x)
        if fx < 0:
            a = x
        else:
            b = x
        xn = x - fx * (x - px) / (fx - pf) if fx != pf else math.nan
        if it % 3 == 2:
            if b - a > width / 2:
                xn = math.nan
            width = b - a
        if not a < xn < b:
            xn = 0.5 * (a + b)
        if abs(xn - x) < xtol or b - a < xtol:
            if slope_out is not None and fx != pf:
                slope_out.append((fx - pf) / (x - px))
            return float(xn)
        px, pf, x = x, fx, xn
        fx = f(x)
    return float(optimize.brentq(f, a, b, xtol=xtol))


def spike_roots(jp: JointProblem, s_lo: float, s_hi: float, shift, n_uncoupled: int, n_max: int):
    """The roots of ``J`` that are spikes of ``P`` (module docstring): those whose null vector lies mostly in ``P``'s
    block, topped up (largest weight there first) to the ``n_uncoupled`` spikes found without the coupling; at most
    ``n_max``.
    ``[(s, weight), ...]``, largest first, each solved to full precision."""
    def pick(roots):
        sel = [i for i, (_, w) in enumerate(roots) if w >= 0.5]
        rest = sorted((i for i in range(len(roots)) if i not in sel), key=lambda i: -roots[i][1])
        return sorted(sel + rest[:max(n_uncoupled - len(sel), 0)])[:n_max]
    roots = jp.roots(s_lo, s_hi, shift, refine=pick)
    return [roots[i] for i in pick(roots)]


def top_quantile_rule(quantiles: int = TOP_QUANTILES) -> tuple[np.ndarray, np.ndarray]:
    """The quantiles ``q_k`` of the law of the batch's most extreme sample at which it is placed, ascending, and their
    weights (summing to 1): ``q = 1 - (1 - u)^2`` at the ``quantiles`` Gauss–Legendre nodes ``u`` of ``[0, 1]``
    (docs/theory/two_step.md §8.3, "Ranks of the spikes over the most extreme sample").

    A mean over batches is ``int_0^1 r(q) dq``, ``r(q)`` the ranks given the sample at its ``q``-quantile.  As
    ``q -> 1`` the sample's place and ``P``'s Gram given it run off without bound, so equally spaced quantiles never
    reach the rare batches that move the ranks most (with 192 of them the quadratic ``sigma``'s spikes are still 3-4 %
    off); ``dq = 2 (1 - u) du`` puts nodes there, and the integrand in ``u`` stays bounded.

    >>> q, w = top_quantile_rule(3)
    >>> [round(float(v), 4) for v in q], round(float(w.sum()), 12)
    ([0.2127, 0.75, 0.9873], 1.0)
    """
    x, w = np.polynomial.legendre.leggauss(quantiles)
    u = (x + 1.0) / 2.0
    return 1.0 - (1.0 - u) ** 2, w * (1.0 - u)


def top_sample_places(law, s_lo: float, quantiles: int = TOP_QUANTILES) -> np.ndarray:
    """Where a batch's most extreme sample puts its outlier, at the quantiles of its law that
    :func:`top_quantile_rule` names (``prod_b (1 - P_b(S > s))^(n_b)`` below ``s``, ``law`` a
    :class:`~rmtfl.theory._two_step.sample_order.SampleLaw`); a quantile below the edge ``s_lo`` at the edge."""
    below = np.prod((1.0 - np.clip(law.tails, 0.0, 1.0)) ** np.asarray(law.sizes, dtype=float)[None, :], axis=1)
    q = top_quantile_rule(quantiles)[0]
    return np.maximum(np.where(q > below[0], np.interp(q, below, law.grid), s_lo), s_lo)


def ranks_over_top_sample(jp: JointProblem, s_lo: float, s_hi: float, shift, column: int, law, ranks: int, *,
                          quantiles: int = TOP_QUANTILES, precise: int | None = None, resolved: bool = False,
                          given_top=None):
    """The mean over batches of the ``r``-th largest root of ``J``, ``r = 1..ranks``, with the batch's most extreme
    sample (the column ``column``) placed at the quantiles of :func:`top_quantile_rule` of the law of its outlier
    location, weighted as that rule says, and the other columns where ``shift`` puts them
    (docs/theory/two_step.md §8.3, "Ranked values"); a rank that a batch has no root for (pushed into the bulk) counts
    at the edge ``s_lo``, as in :func:`~rmtfl.theory._two_step.sample_order.ranks_of`.

    Where that sample can come near a spike of ``P`` the two repel: the ranks' means differ from those of the spike
    and the sample taken apart.  ``law``: the :class:`~rmtfl.theory._two_step.sample_order.SampleLaw` of the
    single-sample outliers; the most extreme sample of a batch lies below ``s`` with probability
    ``prod_b (1 - P_b(S > s))^(n_b)``.  ``precise``: the top ranks solved to :data:`ROOT_RTOL` (default all), the
    others to :data:`COARSE_RTOL`; ``resolved``: ``(means, resolved)``, ``resolved[r]`` whether the ``r``-th rank has
    a root at every quantile (a rank the problem pushes into the bulk in some batches is not resolved there).
    ``given_top``: per quantile, ``[(weight, problem), ...]``, the problem of the batches given their most extreme
    sample there (:meth:`JointProblem.given`, :mod:`.top_sample_gram`), the roots averaged with those weights; by
    default ``jp`` itself at every quantile.
    """
    coarse = None if precise is None else (precise, COARSE_RTOL)
    locs = top_sample_places(law, s_lo, quantiles)
    hi = max(s_hi, 1.2 * float(locs.max()))
    runs, weights, done, last, slopes = [], [], {}, None, {}
    wq = top_quantile_rule(quantiles)[1]          # each quantile's weight
    for k, s_q in enumerate(locs):
        for w, problem in ([(1.0, jp)] if given_top is None else given_top[k]):
            key = (s_q, id(problem))
            if key not in done:          # quantiles below the edge all put the column at the edge: solved once
                sh = np.array(shift, dtype=float)
                sh[column] = problem.denominators(float(s_q))[column]
                # the roots come largest first (to within a few per mille): only the top ``ranks`` are solved further
                roots = problem.roots(s_lo, hi, sh, refine=lambda r: range(min(len(r), ranks)), rtol=ROOT_RTOL,
                                      weights=False, guesses=last, coarse=coarse, slopes=slopes)
                last = [s for s, _ in roots]    # the next solve's roots start from these
                top = sorted((s for s, _ in roots), reverse=True)[:ranks]
                done[key] = top + [math.nan] * (ranks - len(top))   # a value pushed into the bulk
            runs.append(done[key])
            weights.append(w * wq[k])
    runs, weights = np.array(runs), np.array(weights)
    # a value pushed into the bulk counts at its edge; ``resolved``: the ranks with a root at every quantile
    means = [float(v) for v in weights @ np.where(np.isnan(runs), s_lo, runs)]
    return (means, [bool(v) for v in np.all(np.isfinite(runs), axis=0)]) if resolved else means
