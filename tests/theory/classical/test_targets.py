"""Tests of rmtfl.theory._classical.targets (docs/conventions.md §3; reference values: closed forms)."""
import math

import numpy as np
import pytest

from rmtfl.theory import Target, make_target


def test_single_names_and_moments():
    t = make_target("linear")
    assert t.rank == 1 and t.mu1 == (1.0,) and t.second_moment == 1.0
    # He3/sqrt(6): mu_1 = 0, E y^2 = 1
    t = make_target("he3n")
    assert abs(t.mu1[0]) < 1e-15 and abs(t.second_moment - 1.0) < 1e-12


def test_relu_is_centred():
    t = make_target("relu")
    assert t.links[0].name == "relu-c"
    assert abs(t.mu0[0]) < 1e-14
    assert abs(t.offsets[0] - 1 / math.sqrt(2 * math.pi)) < 1e-14
    # E relu^2 - mu_0^2 = 1/2 - 1/(2 pi)
    assert abs(t.second_moment - (0.5 - 1 / (2 * math.pi))) < 1e-10
    assert abs(t.mu1[0] - 0.5) < 1e-14
    raw = make_target("relu", centre=False)
    assert abs(raw.second_moment - 0.5) < 1e-10


def test_hermite_coefficients_and_noise():
    t = make_target([0.0, 1.0, 1 / math.sqrt(2)], noise=0.5)   # z + He2/sqrt2
    assert abs(t.second_moment - (1 + 1 + 0.25)) < 1e-12
    assert t.mu1 == (1.0,)


def test_multi_index_and_callable():
    t = make_target(["linear", "he2n", np.tanh])
    assert t.rank == 3
    assert abs(t.second_moment - (2.0 + t.link_second_moments[2])) < 1e-12
    B = t.direction_matrix(5)
    assert np.array_equal(B, np.eye(5)[:3])


def test_given_directions_and_passthrough():
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 2)))[0].T
    t = make_target(["linear", "tanh"], directions=Q)
    assert isinstance(make_target(t), Target) and make_target(t) is t
    assert np.allclose(t.direction_matrix(6), Q)
    with pytest.raises(ValueError, match="orthonormal"):
        make_target("linear", directions=[[1.0, 1.0, 0.0]])


@pytest.mark.parametrize("bad", ["nonsense", 3.0, [None]])
def test_bad_targets(bad):
    with pytest.raises(ValueError):
        make_target(bad)


def test_negative_noise():
    with pytest.raises(ValueError, match="noise"):
        make_target("linear", noise=-1.0)
