"""benchmarks/diag_pure_profile.py: Gaussian matrices of the widened bulk's own profile."""
import numpy as np
import pytest

from benchmarks.diag_pure_profile import main, pure_profile


def test_a_small_draw_holds_every_case_and_the_nodes_sit_near_the_bulks_values():
    """N = 300, tanh, linear target, (0.2, 0.2), 6 draws: every case, ranks descending, the standard errors positive,
    and the matrix of the bulk's own nodes within 4 standard errors of the bulk's top value (a square-root edge)."""
    r = pure_profile(0.2, 0.2, activation="tanh", target="linear", N=300, draws=6, ranks=3)
    assert set(r) == {"nodes", "rows drawn", "columns of M", "both", "prediction"}
    for case in ("nodes", "rows drawn", "columns of M", "both"):
        mean, se = r[case]
        assert mean.shape == (3,) and np.all(np.diff(mean) < 0) and np.all(se > 0)
    mean, se = r["nodes"]
    assert abs(r["prediction"][0] - mean[0]) < 4 * se[0] + 1e-3


@pytest.mark.parametrize("argv", [["--alphas", "0.5,0.1"], ["--alphas", "x"], ["--N", "10"], ["--draws", "1"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
