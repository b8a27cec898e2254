"""benchmarks/diag_top_quantiles.py (docs/theory/two_step.md §8.3): its default is the prediction itself, and the
number of quantiles reaches the ranks averaged over the most extreme sample."""
import pytest

from benchmarks.diag_top_quantiles import main, top_values
from rmtfl.theory import two_step
from rmtfl.theory._two_step import finite_n as fn
from rmtfl.theory._two_step.joint_roots import TOP_QUANTILES

POINT = "hermite(0, 1, 0.5)|hermite(0, 1, 0, 0.4082482904638631)|reused|0.3|0.2"


def test_the_default_number_of_quantiles_is_the_prediction():
    p = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0, 0.4082482904638631)", psi=1.0, phi=2.0, eta1=1000 ** 0.3,
                 eta2=1000 ** 0.2, N=1000)
    assert top_values(POINT, TOP_QUANTILES) == [o.singular_value for o in p.outliers[:3]]
    other = top_values(POINT, 4)
    assert other != pytest.approx(top_values(POINT, TOP_QUANTILES), rel=1e-3)
    assert fn.TOP_QUANTILES == TOP_QUANTILES          # restored after the block


def test_bad_quantiles_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--points", POINT, "--quantiles", "0"])
    assert e.value.code == 2


def test_equally_spaced_quantiles_give_the_values_before_the_gauss_rule():
    """``--rule midpoint``: six equally spaced quantiles give the values docs/theory/two_step.md §8.3 quotes for them
    ("The quantiles of the most extreme sample": 19.51, 12.27), 6 % and 8 % from the Gauss rule's; the prediction's
    rule is back after the block."""
    from rmtfl.theory._two_step import joint_roots, top_sample_gram

    midpoint = top_values(POINT, 6, rule="midpoint", ranks=2)
    assert midpoint == pytest.approx([19.51, 12.27], abs=5e-3)
    gauss = top_values(POINT, 6, ranks=2)
    assert abs(midpoint[0] / gauss[0] - 1) > 0.05 and abs(midpoint[1] / gauss[1] - 1) > 0.07
    assert joint_roots.top_quantile_rule is top_sample_gram.top_quantile_rule
    assert joint_roots.top_quantile_rule(3)[0][-1] > 0.98         # the Gauss rule's top node, not 5/6
