"""The (alpha1, alpha2) maps at finite N: finite_n_outlier_map (docs/theory/two_step.md §6, §9.1)."""
import math

import pytest


def test_finite_n_outlier_map():
    """At N = 400, alpha2 = 0.3: alpha1 = 0 gives the first direction and a weak second root just above a bulk barely
    wider than MP (predicted 2.104 over the edge 2.098; simulated s2(W_2) = 2.17 +- 0.01 over 12 seeds, simulated top
    of W_2 - P 2.120 +- 0.025).  The count rule of docs/theory/two_step.md §9.2 cannot tell it from the edge: it
    counts it in 3 of those 12 simulations (median count 1), and the prediction, judged by the same rule, counts 1 and
    names the root in its notes.  alpha1 = 0.3 puts the second spike well above the widened edge (2.76; simulated
    bulk top 2.89 +- 0.09, 3 seeds)."""
    from rmtfl.theory import finite_n_outlier_map, two_step_finite_n

    r = finite_n_outlier_map([0.0, 0.3], [0.3], activation="hermite(0, 1, 0.5)", target="linear", psi=1.0, phi=2.0,
                             N=400)
    assert r.count.tolist() == [[1, 2]]
    assert r.edge.shape == (1, 2) and r.edge[0, 1] > r.edge[0, 0] > 2.0
    assert len(r.outliers[0][1]) == 2
    assert 2.05 < r.edge[0, 0] < 2.2
    p = two_step_finite_n("hermite(0, 1, 0.5)", "linear", psi=1.0, phi=2.0, eta1=1.0, eta2=400**0.3, N=400)
    assert any("not counted" in n for n in p.notes)
    d = r.to_dict()                                   # a frozen Result, JSON-ready
    assert d["count"] == [[1, 2]] and len(d["outliers"][0][1]) == 2


def test_finite_n_outlier_map_any_sigma_and_bad_input():
    """Any smooth sigma now (docs/theory/two_step.md §8.2); alpha outside [0, 1/2) and N < 2 are ValueErrors."""
    from rmtfl.theory import finite_n_outlier_map

    r = finite_n_outlier_map([0.3], [0.3], activation="tanh", target="linear", psi=1.0, phi=2.0, N=400)
    assert r.count.tolist() == [[1]] and bool(r.reliable[0, 0])
    kw = dict(activation="tanh", target="linear", psi=1.0, phi=2.0)
    with pytest.raises(ValueError, match="alpha1"):
        finite_n_outlier_map([0.5], [0.3], N=100, **kw)
    with pytest.raises(ValueError, match="alpha2"):
        finite_n_outlier_map([0.1], [-0.1], N=100, **kw)
    with pytest.raises(ValueError, match="N must"):
        finite_n_outlier_map([0.1], [0.1], N=1, **kw)


def test_finite_n_outlier_map_with_grouped_extreme_samples():
    """The map takes each point's prediction with the extreme samples as one group (docs/theory/two_step.md §8.3):
    its count and range are those of two_step_finite_n with the same option; a bad name is a ValueError."""
    from rmtfl.theory import finite_n_outlier_map, two_step_finite_n

    kw = dict(activation="gelu", target="hermite(0, 1, 0.5)", psi=1.0, phi=2.0, N=1000)
    r = finite_n_outlier_map([0.4], [0.4], **kw, extreme_samples="grouped")
    p = two_step_finite_n("gelu", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.4, N=1000,
                          extreme_samples="grouped")
    assert int(r.count[0, 0]) == len(p.outliers) and (int(r.count_low[0, 0]), int(r.count_high[0, 0])) == p.count_range
    with pytest.raises(ValueError, match="extreme_samples"):
        finite_n_outlier_map([0.4], [0.4], **kw, extreme_samples="pairs")


def test_finite_n_outlier_map_names_the_steps_it_cannot_handle(monkeypatch):
    """Steps far beyond the checked range: a point whose finite-N bulk is found is marked unreliable (here
    eta1 * max|a_j| is about 25, docs/theory/two_step.md §8.2; the edge, at x = 5.4038e4, is the lowest point of the
    branch followed in steps of 0.01 in log|m| too, to 1e-5; it was 7.2041e4 with the bulk's columns along the law
    of M over the samples inside the cut, and 5.4568e4 with the band of this he2 target's extreme samples at its
    quantiles, docs/theory/two_step.md §8.2, "The bulk's columns"; before the extreme
    samples were cut as the tails of z*, docs/theory/two_step.md §8.3, this he2 target at a batch of 50 kept every
    sample in the bulk and the branch ended at 3.2970e6), and one where the route finds no bulk
    (docs/theory/two_step.md §9)
    is a ValueError naming c1, c2 and the point, not a RuntimeError from inside."""
    import warnings

    import rmtfl.theory._two_step.phase as phase
    from rmtfl.theory import finite_n_outlier_map

    kw = dict(activation="hermite(0, 1, 0.5)", target="he2", psi=0.1, phi=0.5, N=10, c1=50.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = finite_n_outlier_map([0.0], [0.45], **kw)
    assert not r.reliable[0, 0]
    assert r.edge[0, 0] == pytest.approx(math.sqrt(5.4038e4), rel=1e-4)

    def no_bulk(*args, **kwargs):
        raise RuntimeError("finite-N bulk: no fold of the profile within 400 solves")

    monkeypatch.setattr(phase, "two_step_finite_n", no_bulk)
    with pytest.raises(ValueError, match=r"c1, c2: no finite-N bulk at \(alpha1, alpha2\) = \(0, 0.45\)"):
        finite_n_outlier_map([0.0], [0.45], **kw)


@pytest.mark.parametrize("act", ["tanh", "gelu", "hermite(0, 1, 0.5)", "hermite(0, 0, 1)", "hermite(0, 0, 0, 1)",
                                 "hermite(0, 0, 1, 1)", "hermite(0, 0, 1, 0, 1)", "hermite(0, 0.3, 1, 0, 0.5)"])
@pytest.mark.parametrize("batch", ["reused", "fresh"])
def test_nonzero_k_is_where_the_sample_weights_P_k_do_not_vanish(act, batch):
    """``nonzero_k`` (docs/theory/two_step.md §6, "Vanishing coefficients") against the weights ``P_k`` themselves,
    evaluated on a grid of samples ``(y, s)``: a Stein moment that multiplies an odd Gaussian moment ``M_r(0; tau_h)``
    (``mu_1 = 0``) gives nothing.  An even sigma (``mu_1 = 0``) has no ``P_k`` at all, as the finite-N route."""
    import numpy as np

    from rmtfl.theory import get_activation, make_target, phase_diagram
    from rmtfl.theory._two_step.spike_vectors import P_k, spike_setup

    K = 6
    st = spike_setup(get_activation(act), make_target("hermite(0, 1, 0.5)"), K)
    y, s = np.meshgrid(np.linspace(-3, 3, 7), np.linspace(-2, 2, 5))
    live = tuple(k for k in range(1, K + 1)
                 if np.max(np.abs(P_k(k, batch, y=y, s=s, stein=st.stein, mu1=st.mu1, tau_h=0.7, phi=2.0))) > 1e-9)
    pd = phase_diagram([0.45], [0.45], activation=act, target="hermite(0, 1, 0.5)", batch=batch, kmax=K)
    assert pd.nonzero_k == live
    assert pd.effective.tolist() == [[sum(1 for k in live if k <= pd.Lambda[0, 0])]]


def test_an_even_sigma_has_no_spikes_on_either_side_of_the_first_line():
    """The square sigma: Lambda = 1 above alpha1 + alpha2 = 1/2, but P_1 = mu_2 M_1(0; tau_h) = 0 (fresh) and
    E[sigma'' sigma'] = 0 (reused), so no spike beyond the first direction anywhere (docs/theory/two_step.md §6)."""
    from rmtfl.theory import phase_diagram

    for batch in ("reused", "fresh"):
        pd = phase_diagram([0.1, 0.3, 0.4], [0.2, 0.35], activation="hermite(0, 0, 1)", target="hermite(0, 1, 0.5)",
                           batch=batch)
        assert pd.Lambda.tolist() == [[0, 1, 1], [0, 1, 1]] and pd.effective.tolist() == [[0, 0, 0], [0, 0, 0]]
        assert pd.nonzero_k == ()
