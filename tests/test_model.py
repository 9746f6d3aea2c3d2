"""The network graph and the initialisation of seed 000 (eqs. 30-33, 69; Appendix A)."""

from __future__ import annotations

import numpy as np
import pytest

from seqd.core.initialization import (
    ALPHA,
    initial_potentials,
    logistic_potentials,
    logistic_transition,
    unit_transition,
)
from seqd.core.model import ModelSpec, initialize, random_graph, reparametrize, symbol_frequencies


def test_graph_has_bias_self_loop_and_distinct_inputs():
    inputs = random_graph(12, 4, np.random.default_rng(0))
    assert inputs.shape == (13, 5)
    for j in range(1, 13):
        assert inputs[j, 0] == 0 and inputs[j, 1] == j
        others = inputs[j, 2:]
        assert len(set(others)) == 3 and j not in others and all(1 <= i <= 12 for i in others)
    fully = random_graph(5, 5, np.random.default_rng(0))
    for j in range(1, 6):
        assert sorted(fully[j, 1:]) == [1, 2, 3, 4, 5]


def test_glnn_initialisation_follows_eqs_30_to_33():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 5, 500)
    spec = ModelSpec("glnn", 6, 3, "tanh", 5)
    nu, nu_tilde = symbol_frequencies(x, None, 5)
    p = initialize(spec, nu, nu_tilde, np.random.default_rng(1))
    np.testing.assert_allclose(p.writing_weights[0], np.log(nu))  # eq. (30)
    assert np.all(p.writing_weights[1:] == 0)
    assert np.all(p.transition_weights[:, 1:, 1] == -ALPHA)  # eq. (31)
    assert np.all(p.transition_weights[:, 1:, 2:] == 0)
    j = np.arange(1, 7)
    mu = 1 / (j + 1)
    beta = -np.sqrt(ALPHA * (ALPHA - mu))
    bias = p.transition_weights[:, 1:, 0]  # (A, N): beta_j + mu_j/4 (u_jy - sum nu~ u)
    centred = (bias - beta) / (mu / 4)
    np.testing.assert_allclose(nu_tilde @ centred, 0, atol=1e-12)  # centred on the data's frequencies
    assert np.all(np.abs(centred) <= 1)
    np.testing.assert_allclose(np.tanh(p.initial_potential[1:]), beta / ALPHA)  # V^0 = s^-1(beta/alpha)


def test_rnn_initialisation_follows_eq_69():
    x = np.arange(4).repeat(10)
    spec = ModelSpec("rnn", 5, 2, "tanh", 4)
    nu, nu_tilde = symbol_frequencies(x, None, 4)
    p = initialize(spec, nu, nu_tilde, np.random.default_rng(1))
    assert p.transition_weights.shape == (1, 6, 3)
    np.testing.assert_allclose(p.transition_weights[0, 1:, 1], 1 - 1 / np.arange(1, 6))
    np.testing.assert_allclose(nu_tilde @ p.input_weights[:, 1:], 0, atol=1e-12)
    assert np.all(np.abs(p.input_weights) <= 0.5)


def test_frequencies_are_finite_for_absent_symbols():
    nu, nu_tilde = symbol_frequencies(np.array([0, 0, 1]), np.array([1.0, 1.0, 0.0]), 3)
    assert np.all(np.isfinite(np.log(nu))) and nu.sum() == pytest.approx(1)
    np.testing.assert_allclose(nu_tilde, [2 / 3, 1 / 3, 0])


def test_spec_validation():
    with pytest.raises(ValueError, match="model must be one of"):
        ModelSpec("lstm")
    with pytest.raises(ValueError, match="degree"):
        ModelSpec("glnn", units=3, degree=4)
    with pytest.raises(ValueError, match="activation"):
        ModelSpec(activation="relu")
    spec = ModelSpec("glnn", 4, 2, "tanh", 3)
    p = initialize(spec, np.full(3, 1 / 3), np.full(3, 1 / 3), np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown activations"):
        reparametrize(p, spec, "tanh", "relu")


@pytest.mark.parametrize("model", ["glnn", "gnn"])
def test_unit_initialisation_maps_to_logistic_as_reparametrize_does(model):
    """The online learner's per-unit tanh -> logistic map is model.reparametrize's, bit for bit."""
    spec = ModelSpec(model=model, units=7, degree=3, alphabet_size=4)
    p = initialize(spec, np.full(4, 0.25), np.full(4, 0.25), np.random.default_rng(3))
    mapped = reparametrize(p, spec, "tanh", "logistic")
    for y in range(4):
        for j in range(1, 8):
            self_loop, bias = logistic_transition(p.transition_weights[y, j, 1], p.transition_weights[y, j, 0])
            assert (bias, self_loop) == tuple(mapped.transition_weights[y, j, :2])  # slot 0: unit 0, slot 1: j
            assert unit_transition(spec.leak, j, 0.0, 1.0)[0] == p.transition_weights[y, j, 1]
    assert np.array_equal(logistic_potentials(p.initial_potential[1:]), mapped.initial_potential[1:])
    assert np.array_equal(initial_potentials(spec.leak, 7), p.initial_potential[1:])
