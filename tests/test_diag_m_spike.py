"""benchmarks/diag_m_spike.py: planted samples and the whole-law eigenvalue in the prediction
(docs/theory/two_step_attempts.md §4; the principal value itself: tests/theory/two_step/test_whole_law.py)."""
from __future__ import annotations

from benchmarks.diag_m_spike import m_spike_whole_law, planted
from rmtfl.theory import make_target


def test_planted_sample_at_small_size():
    """d = 300, n = 600, z* = 3.4, 40 draws: the simulated eigenvalue within 3 s.e. plus 5/d of the whole-law pole."""
    target = make_target("hermite(0, 1, 0.5)")
    m, se = planted(target, 3.4, d=300, n=600, draws=40)
    assert abs(m_spike_whole_law(target, [8.68], [3.4], 2.0, 300)[0] - m) < 3 * se + 5.0 / 300


def test_the_whole_law_eigenvalue_in_the_prediction_and_back():
    """Within ``whole_law_eigenvalues`` the single-sample outliers of the quadratic sigma with He1 + He2/2, each at
    the mean of its own law (``as_own_laws``), rise (the whole-law pole lies above the pole over the bulk's samples),
    its spikes of P barely move (measured: the top 65.002 -> 64.922, the single samples 11.560, 9.485 -> 11.931,
    9.771; three more are counted within it), and after the block the prediction is the same to the last digit
    (docs/theory/two_step_attempts.md §4)."""
    from benchmarks.diag_m_spike import as_own_laws, whole_law_eigenvalues
    from rmtfl.theory import two_step

    N, hq = 1000, "hermite(0, 1, 0.5)"

    def predict():
        return two_step(hq, hq, psi=1.0, phi=2.0, eta1=N**0.4, eta2=N**0.4, N=N, batch="reused").outliers

    plain = predict()
    with as_own_laws():
        before = predict()
    with whole_law_eigenvalues(make_target(hq), float(N)):
        during = predict()
    assert predict() == plain
    with as_own_laws():
        after = predict()
    assert [o.singular_value for o in after] == [o.singular_value for o in before]
    pairs = [(b, d) for b, d in zip(before, during) if b.kind == "sample" and d.kind == "sample"]
    assert len(pairs) >= 2 and all(d.singular_value > 1.015 * b.singular_value for b, d in pairs)
    assert abs(during[0].singular_value / before[0].singular_value - 1) < 5e-3
