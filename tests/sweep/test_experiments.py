"""The experiment registry: theory map, determinism of the two-step and one-step tasks."""
import numpy as np
import pytest

from rmtfl.sweep import EXPERIMENTS, get_experiment, run_sweep, theory_outliers


def test_theory_outliers_values():
    # #{k <= Lambda : P_k != 0}, Lambda = min(L-1, floor(alpha2 / (1/2 - alpha1))) (docs/theory/two_step.md §6);
    # odd sigma keeps even k only; ratios r = 0.45 / (0.5 - alpha1) = 0.9, 1.5, 2.25, 4.5, 9
    a1 = [0.0, 0.2, 0.3, 0.4, 0.45]

    def count(act, alpha2=(0.45,)):
        return theory_outliers(act, "linear", alpha1=a1, alpha2=alpha2)

    assert count("gelu").ravel().tolist() == [0, 1, 2, 4, 9]
    assert count("tanh").ravel().tolist() == [0, 0, 1, 2, 4]
    assert count("he3").ravel().tolist() == [0, 0, 1, 1, 1]  # L - 1 = 2, odd
    assert count("gelu", [0.1, 0.45]).shape == (2, 5)        # rows alpha2, as rmtfl.theory.PhaseDiagram


def test_registry_and_unknown_names():
    from rmtfl import _defaults

    assert set(EXPERIMENTS) == {"bbp", "two-step", "one-step", "kernel"}
    for exp in EXPERIMENTS.values():                  # the model defaults are those of rmtfl._defaults
        for key in ("activation", "target", "psi", "phi"):
            if key in exp.fixed:
                assert exp.fixed[key] == getattr(_defaults, key.upper()), (exp.name, key)
    with pytest.raises(ValueError, match="experiment must be one of"):
        get_experiment("three-step")
    with pytest.raises(ValueError, match="no parameters"):
        get_experiment("two-step").params({"alpha3": 0.1})


def test_two_step_task_is_deterministic_and_measures():
    exp = get_experiment("two-step")
    p = exp.params({"N": 150, "alpha1": 0.3, "alpha2": 0.3, "activation": "tanh", "target": "linear"})
    a = exp.fn(p, np.random.default_rng(5), "numpy")
    b = exp.fn(p, np.random.default_rng(5), "numpy")
    assert a == b
    assert a["outliers_total"] >= 1 and a["s1"] > a["edge"] > a["s2"] - 0.5
    assert a["separated_total"] >= 1 and a["separated"] == a["separated_total"] - 1
    assert a["eta1"] == pytest.approx(150 ** 0.3)
    assert 0 <= a["cos2_target"] <= 1 and 0 <= a["cos2_a"] <= 1
    with pytest.raises(ValueError, match="alpha1"):
        exp.fn({**p, "alpha1": 0.5}, np.random.default_rng(0), "numpy")


def test_one_step_sweep_crosses_bbp_threshold():
    """Below eta_c no outlier, well above it one (docs/theory/two_step.md §3.3: tanh, linear target, psi=1, phi=2)."""
    from rmtfl.theory import one_step

    exp = get_experiment("one-step")
    eta_c = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=1.0).threshold
    model = {"activation": "tanh", "target": "linear", "N": 300}
    grid = [exp.params({"eta": 0.3 * eta_c, **model}), exp.params({"eta": 3 * eta_c, **model})]
    res = run_sweep(exp, grid, 3, workers=0, progress=False)
    below, above = (r.mean for r in res.results)
    assert below["outliers_total"] == 0 and above["outliers_total"] == 1
    pred = one_step("tanh", "linear", psi=1.0, phi=2.0, eta=3 * eta_c).singular_value
    assert abs(above["s1"] - pred) < 3 * 300 ** -0.5


def _has_gpu():
    try:
        from rmtfl.numerics import get_backend

        get_backend("cupy")
        return True
    except ValueError:
        return False


@pytest.mark.skipif(_has_gpu(), reason="checks the no-GPU error path")
def test_cupy_backend_without_gpu_is_a_clear_error(tmp_path, capsys):
    from rmtfl.cli import main

    rc = main(["sweep", "two-step", "--N", "40", "--seeds", "1", "--backend", "cupy", "--workers", "0",
               "--store", str(tmp_path / "g.sqlite"), "--no-progress"])
    assert rc == 2 and "cupy" in capsys.readouterr().err
    assert not (tmp_path / "g.sqlite").exists()


@pytest.mark.gpu
def test_cupy_backend_runs_the_tasks_on_the_gpu():
    """Same host random numbers on both backends: cupy results agree with numpy to rounding."""
    exp = get_experiment("two-step")
    grid = [exp.params({"N": 200, "alpha1": 0.3, "alpha2": 0.3})]
    cpu = run_sweep(exp, grid, 2, workers=0, progress=False)
    gpu = run_sweep(exp, grid, 2, workers=0, backend="cupy", progress=False)
    assert gpu.failed == 0
    for m in ("s1", "s2", "cos2_target"):
        assert gpu.results[0].mean[m] == pytest.approx(cpu.results[0].mean[m], rel=1e-8, abs=1e-10)


def test_kernel_sweep_over_b_grows_the_top_eigenvalue():
    """Spiking Gamma along v raises the top Gram eigenvalue and its degree-2 overlap (docs/theory/spiked_kernel.md §7.1)."""
    exp = get_experiment("kernel")
    grid = [exp.params({"b": 0.0, "n": 300}), exp.params({"b": 16.0, "n": 300})]
    res = run_sweep(exp, grid, 2, workers=0, progress=False)
    flat, spiked = (r.mean for r in res.results)
    assert res.failed == 0 and spiked["eigenvalue"] > flat["eigenvalue"] and spiked["cos2_y2"] > flat["cos2_y2"]
