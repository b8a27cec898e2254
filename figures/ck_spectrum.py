"""Conjugate-kernel spectrum before and after one step: sampled ESD, predicted density and outliers.

Writes ``ck_spectrum.png``: left, relu features (``psi = 1``, ``phi = 2``) with the predicted law of
``K = F F^T / N`` and its ``mu_0`` outlier (docs/theory/kernel_spectra.md §1–2); right, tanh features
(``psi = phi = 1``) before and after one gradient step of size ``eta = 3`` on a linear target, with the
predicted step spike (docs/theory/kernel_spectra.md §4).

Usage: ``python figures/ck_spectrum.py --out DIR [--quick]``.
"""
from __future__ import annotations

from pathlib import Path


def main(argv=None) -> int:
    from rmtfl.compare._figures import figure_args

    args = figure_args(__doc__, argv)
    import matplotlib.pyplot as plt

    from rmtfl.compare import save_figure
    from rmtfl.numerics import simulate_ck, simulate_ck_one_step
    from rmtfl.plots import plot_ck_spectrum
    from rmtfl.theory import ck_one_step_spikes, ck_spectrum

    d = 250 if args.quick else 1000
    fig, axs = plt.subplots(1, 2, figsize=(11, 4))
    law = ck_spectrum("relu", psi=1.0, phi=2.0, N=d)
    s = simulate_ck("relu", N=d, d=d, n=2 * d, rng=0)
    plot_ck_spectrum(s.eigenvalues, law, outliers=[o.location for o in law.outliers], ax=axs[0])
    axs[0].set_title(f"relu, psi=1, phi=2, d={d}: top sampled {s.eigenvalues[0]:.2f}", fontsize=9)
    eta = 3.0
    pred = ck_one_step_spikes("tanh", "linear", psi=1.0, phi=1.0, eta=eta, N=d)
    r = simulate_ck_one_step("tanh", "linear", N=d, d=d, n=d, eta=eta, rng=1)
    plot_ck_spectrum(r.before, pred.bulk, after=r.after,
                     after_outliers=[sp.location for sp in pred.spikes if sp.kind == "step"], ax=axs[1])
    axs[1].set_title(f"tanh, one step eta={eta:g}, d={d}: top after {r.after[0]:.2f}", fontsize=9)
    fig.tight_layout()
    save_figure(fig, Path(args.out) / "ck_spectrum.png", dict(d=d, eta=eta, quick=bool(args.quick)))
    plt.close(fig)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
