"""Lesson 1 — The Marchenko–Pastur law from scratch.

Take an N x d matrix W with i.i.d. N(0, 1/d) entries (the first-layer weights at
initialisation, docs/conventions.md §4) and look at the eigenvalues of W Wᵀ.  As
N, d -> ∞ with ψ = N/d fixed, their histogram converges to the Marchenko–Pastur
law with edges (1 ± √ψ)², and an atom of mass 1 - 1/ψ at zero when ψ > 1.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402

# --- 1. Sample.  All randomness goes through an explicit generator (rng=).
d = size(300, 2000)
psi = 0.5
N = int(psi * d)
W = nm.gaussian_matrix(N, d, rng=np.random.default_rng(1))
eigs = nm.eigenvalues_of_gram(W)          # the N eigenvalues of W Wᵀ

# --- 2. Predict.  Edges, moments and the density need no simulation at all.
lo, hi = th.mp_edges(psi)
row("lower edge (1-√ψ)²", lo, eigs.min())
row("upper edge (1+√ψ)²", hi, eigs.max())
m = th.mp_moments(3, psi)                 # ∫λ^k ρ_ψ: 1, 1+ψ, 1+3ψ+ψ²
for k in (1, 2, 3):
    row(f"moment E λ^{k}", m[k], np.mean(eigs**k))

# --- 3. Compare the whole law: the Kolmogorov–Smirnov distance is O(log N / N),
# far below the N^-1/2 of i.i.d. samples, because eigenvalues repel ("rigidity").
print(f"KS distance to MP: {nm.ks_distance_mp(eigs, psi):.4f}  (N = {N})")

# --- 4. Picture: histogram against density.
fig, ax = plt.subplots(figsize=(5, 3.2))
ax.hist(eigs, bins=50, density=True, alpha=0.5, label=f"eigenvalues of W Wᵀ, N={N}")
x = np.linspace(lo, hi, 400)
ax.plot(x, th.mp_density(x, psi), "k", label=f"Marchenko–Pastur, ψ={psi}")
ax.set_xlabel("λ")
ax.legend(fontsize=8)
fig.savefig(OUT / "01_mp_law.png", dpi=100, bbox_inches="tight")

# Exercise: set psi = 2.  Where do the missing N - d eigenvalues go?  (th.mp_atom(2.0))
