"""Lesson 5 — Kernels on the sphere, and how one step reshapes them.

A random-features kernel k(x, x') = E_w[σ(⟨w,x⟩) σ(⟨w,x'⟩)] with isotropic
w ~ N(0, I) depends on x, x' ∈ S^{d−1} only through ⟨x, x'⟩, so by the
Funk–Hecke theorem its eigenfunctions are the spherical harmonics: degree k
has multiplicity N(d, k) and one eigenvalue μ_k (docs/conventions.md §8, uniform
probability measure).  After one large gradient step the weights are
approximately N(0, Γ) with Γ = A(I + b w*w*ᵀ) (docs/theory/spiked_kernel.md): the kernel is
no longer rotation invariant.  The linear function ⟨x, w*⟩ is boosted, and the
top eigenfunction mixes the constant Y0 with the target-aligned quadratic
harmonic Y2.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _lesson import OUT, row, size  # noqa: E402

import rmtfl.numerics as nm  # noqa: E402
import rmtfl.theory as th  # noqa: E402

d = 10
n = size(1200, 3000)
rng = np.random.default_rng(5)

# --- 1. Funk–Hecke eigenvalues of the relu kernel against a Gram matrix K/n.
sp = th.sphere_eigenvalues("relu", d=d, kmax=4)
print("degree k:      ", list(range(5)))
print("multiplicity:  ", [th.harmonic_multiplicity(d, k) for k in range(5)])
blocks = nm.gram_degree_eigenvalues("relu", d=d, n=n, degrees=(0, 1, 2), rng=rng)
for k, pred, meas in zip(blocks.degrees, blocks.predicted, blocks.mean):
    row(f"μ_{k} (block of {th.harmonic_multiplicity(d, k)})", pred, meas)

# --- 2. The spiked kernel: Y2 mixing of the top eigenfunction against b.
bs = [0.0, 5.0, 20.0]
pred_y2, meas_y2 = [], []
for b, child in zip(bs, rng.spawn(len(bs))):
    z = th.zonal_top_eigenfunction("relu", d=d, b=b)          # exact zonal eigenproblem
    g = nm.gram_alignment("relu", d=d, n=n, b=b, rng=child)    # one sampled Gram matrix
    pred_y2.append(z.overlaps[2])
    meas_y2.append(g.cos2_y2)
    row(f"b={b:g}: cos²(top eigenfunction, Y2)", z.overlaps[2], g.cos2_y2)

# --- 3. The linear sector (relu, Gaussian inputs): (A+B)/4 along w*, A/4 orthogonal.
ls = th.linear_sector("relu", A=1.0, B=3.0, d=d)
print(f"linear sector: target {ls.target:.4f} = (A+B)/4, orthogonal {ls.orthogonal:.4f} = A/4, "
      f"boost x{ls.boost:.1f}")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
axes[0].semilogy(np.arange(5), sp.mu, "o-", label="Funk–Hecke μ_k")
axes[0].semilogy(blocks.degrees, blocks.mean, "x", ms=10, label=f"Gram K/n, n={n}")
axes[0].set(xlabel="degree k", ylabel="eigenvalue")
grid = np.linspace(0, 25, size(6, 26))
axes[1].plot(grid, [th.zonal_top_eigenfunction("relu", d=d, b=b).overlaps[2] for b in grid], "k",
             label="zonal operator")
axes[1].plot(bs, meas_y2, "o", label="Gram top eigenvector")
axes[1].set(xlabel="spike ratio b = B/A", ylabel="cos²(top eigenfunction, Y2)")
for ax in axes:
    ax.legend(fontsize=7)
fig.savefig(OUT / "05_kernels.png", dpi=100, bbox_inches="tight")

# Exercise: th.spike_constants("relu", "linear", N=N, d=d, n=n, eta=eta) turns a
# step size into (A, B, b).  Which η makes b = 20 at N = d = 10?
# (th.eta_from_b("relu", "linear", psi=1.0, b=20.0))
