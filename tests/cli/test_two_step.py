"""CLI of the two-step part: rmtfl theory one-step|two-step, rmtfl simulate two-step."""
import json

import pytest

from rmtfl.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_theory_one_step(capsys):
    r = _json(capsys, ["theory", "one-step", "--eta", "3", "--activation", "tanh", "--target", "linear", "--json"])
    assert abs(r["singular_value"] - 2.674841) < 1e-5 and r["threshold"] > 1.3
    d = _json(capsys, ["theory", "one-step", "--eta", "3", "--json"])      # defaults of rmtfl._defaults
    from rmtfl import _defaults

    assert (d["activation"], d["target"], d["psi"], d["phi"]) == (_defaults.ACTIVATION, [_defaults.TARGET],
                                                                  _defaults.PSI, _defaults.PHI)


def test_theory_two_step_alpha_form(capsys):
    r = _json(capsys, ["theory", "two-step", "--activation", "tanh", "--target", "linear", "--alpha1", "0.1",
                       "--alpha2", "0.1", "--c1", "1", "--c2", "1", "--N", "1000", "--json"])
    assert len(r["outliers"]) >= 1 and r["outlier_count"]["count"] == 0
    assert r["eta1"] == pytest.approx(1000 ** 0.1)


def test_theory_two_step_quadratic(capsys):
    r = _json(capsys, ["theory", "two-step", "--activation", "hermite(0,1,0.5)", "--target",
                       "hermite(0,1,0.7071067811865476)", "--phi", "4", "--eta1", "8", "--eta2", "8",
                       "--N", "1500", "--json"])
    # two spikes of P, then the outliers of the batch's most extreme samples (docs/theory/two_step.md §8.3)
    kinds = [o["kind"] for o in r["outliers"]]
    assert kinds[:2] == ["spike", "spike"] and set(kinds[2:]) <= {"sample"}
    from rmtfl.theory import two_step

    p = two_step("hermite(0,1,0.5)", "hermite(0,1,0.7071067811865476)", psi=1.0, phi=4.0, eta1=8.0, eta2=8.0,
                 N=1500)
    assert [o["singular_value"] for o in r["outliers"]] == [o.singular_value for o in p.outliers]


def test_theory_two_step_prints_both_edges_at_finite_n(capsys):
    # the fold of the bulk's density and the count rule's edge on the predicted spectrum (docs/theory/two_step.md §8.4)
    argv = ["theory", "two-step", "--activation", "tanh", "--alpha1", "0.3", "--alpha2", "0.3", "--N", "1000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    r = _json(capsys, argv + ["--json"])
    assert f"bulk edge: {r['bulk_edge']:.6f}" in out and f"the count rule fits {r['fitted_edge']:.6f}" in out
    assert main(["theory", "two-step", "--eta1", "1", "--eta2", "1"]) == 0       # no N: no fitted edge
    assert "count rule fits" not in capsys.readouterr().out


def test_theory_two_step_grouped_extreme_samples(capsys):
    # the batch's most extreme samples as one group, the count through the Poisson process
    # (docs/theory/two_step.md §8.3): the command prints and records what rmtfl.theory.two_step returns with it
    from rmtfl.theory import two_step

    argv = ["theory", "two-step", "--activation", "hermite(0, 1, 0.5)", "--alpha1", "0.4", "--alpha2", "0.4",
            "--N", "1000", "--extreme-samples", "grouped", "--json"]
    r = _json(capsys, argv)
    p = two_step("hermite(0, 1, 0.5)", "hermite(0, 1, 0.5)", psi=1.0, phi=2.0, eta1=1000**0.4, eta2=1000**0.4, N=1000,
                 extreme_samples="grouped")
    assert r["extreme_samples"] == "grouped"
    assert [o["singular_value"] for o in r["outliers"]] == [o.singular_value for o in p.outliers]
    assert r["count_range"] == list(p.count_range)


def test_theory_two_step_names_the_bulks_top_tail(capsys):
    # the values the count reads in the bulk's thin top tail (docs/theory/two_step.md §8.3, "The bulk's top tail")
    argv = ["theory", "two-step", "--activation", "gelu", "--alpha1", "0.4", "--alpha2", "0.4", "--N", "2000"]
    r = _json(capsys, argv + ["--json"])
    assert [o["kind"] for o in r["outliers"]][-1] == "tail"
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"outlier {len(r['outliers'])}: s = {r['outliers'][-1]['singular_value']:.6f}" in out
    assert out.count("a top value of the bulk's thin tail") == 1


def test_theory_two_step_header_names_the_truncation_of_its_route(capsys):
    # the finite-N route keeps sigma' exact (K = -1 in the result): the header says so instead of printing K=-1
    argv = ["theory", "two-step", "--activation", "tanh", "--alpha1", "0.3", "--alpha2", "0.3", "--N", "1000"]
    assert main(argv) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith("N=1000, no Taylor truncation") and "K=-1" not in head
    assert main(["theory", "two-step", "--activation", "tanh", "--eta1", "3", "--eta2", "3"]) == 0
    assert "Taylor order K=" in capsys.readouterr().out.splitlines()[0]


def test_theory_two_step_fresh_batch_defaults_phi2_to_phi(capsys):
    a = _json(capsys, ["theory", "two-step", "--eta1", "1", "--eta2", "1", "--batch", "fresh", "--json"])
    b = _json(capsys, ["theory", "two-step", "--eta1", "1", "--eta2", "1", "--batch", "fresh", "--phi2", "2",
                       "--json"])
    assert a["phi2"] == 2.0 and a["outliers"] == b["outliers"]


def test_simulate_two_step(capsys, tmp_path):
    r = _json(capsys, ["simulate", "two-step", "--N", "120", "--d", "120", "--n", "240", "--eta1", "1.5",
                       "--eta2", "1.5", "--batch", "fresh", "--n2", "240", "--k", "4", "--json",
                       "--out", str(tmp_path)])
    assert r["outlier_count"] >= 1 and (tmp_path / "two_step_spectrum.png").exists()
    assert (tmp_path / "two_step_simulation.json").exists()


@pytest.mark.parametrize("argv", [
    ["theory", "two-step", "--alpha1", "0.5", "--eta2", "1", "--N", "100"],
    ["theory", "one-step", "--eta", "1", "--psi", "-1"],
    ["theory", "one-step", "--eta", "1", "--activation", "nope"],
    ["simulate", "two-step", "--N", "0", "--d", "50", "--n", "50", "--eta1", "1", "--eta2", "1"],
    ["theory", "two-step", "--target", "hermite(0, 1, 0, 0, 0, 0.1)", "--eta1", "1", "--eta2", "1", "--N", "1000"],
])
def test_bad_input_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rmtfl: error:") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, message", [
    (["theory", "two-step", "--eta1", "1", "--eta2", "1", "--c1", "2"], "--c1 applies only with --alpha1"),
    (["theory", "two-step", "--alpha1", "0.2", "--eta2", "1"], "--alpha1 needs the width --N"),
    (["theory", "two-step", "--eta1", "1", "--alpha1", "0.2", "--eta2", "1"], "not allowed with"),
    (["theory", "two-step", "--eta2", "1"], "one of the arguments --eta1 --alpha1 is required"),
    (["theory", "two-step", "--eta1", "1", "--eta2", "1", "--phi2", "3"], "--phi2 applies only with --batch fresh"),
    (["simulate", "two-step", "--N", "50", "--d", "50", "--n", "50", "--eta1", "1", "--eta2", "1", "--n2", "60"],
     "--n2 applies only with --batch fresh"),
    (["theory", "two-step", "--eta1", "1", "--eta2", "1", "--seed", "3"], "unrecognized arguments: --seed"),
    (["theory", "two-step", "--eta1", "1", "--eta2", "1", "--extreme-samples", "grouped"],
     "--extreme-samples applies only with --N"),
    (["phase-diagram", "--alpha1", "0.3", "--alpha2", "0.3", "--extreme-samples", "grouped"],
     "--extreme-samples applies only with --N"),
    (["theory", "one-step", "--eta", "1", "--out", "x"], "unrecognized arguments: --out"),
])
def test_flags_that_would_change_nothing_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_theory_two_step_lists_the_significant_singular_values_of_p(capsys):
    """The text report lists the singular values of P above 1e-3 of the largest and counts the rest (the finite-N
    route's quadrature round-off); the JSON report keeps every one."""
    argv = ["theory", "two-step", "--activation", "gelu", "--alpha1", "0.1", "--alpha2", "0.4", "--N", "1000"]
    assert main(argv) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "singular values of P" in ln)
    spikes = _json(capsys, argv + ["--json"])["spikes"]
    shown = [v for v in spikes if v >= 1e-3 * max(spikes)]
    listed = line.split(": ", 1)[1].split(" (and")[0].split(", ")
    assert [float(v) for v in listed] == pytest.approx(shown, rel=1e-5)
    assert 0 < len(shown) < len(spikes) and f"(and {len(spikes) - len(shown)} below 0.001 of the largest" in line
