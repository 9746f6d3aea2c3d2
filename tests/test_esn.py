"""The echo-state learner (``seqd.core.esn``) against a NumPy reference, and its reservoir against its recipe.

The learner's interface (determinism, snapshots, errors, prediction) is held by the contract suite
(``contract.py``: entries ``esn-*``); here, what it computes.
"""

from __future__ import annotations

import numpy as np
import pytest

import naive
from seqd.core.esn import ESNConfig, ESNLearner
from seqd.core.esn.reservoir import spectral_radius


def _dense(state, N):
    W = np.zeros((N, N))
    for j in range(N):
        for c, source in enumerate(state.sources[j]):
            W[j, source] += state.weights[j, c]
    return W


@pytest.mark.parametrize("settings", [dict(), dict(leak=0.0, spectral_radius=1.2), dict(writing_evidence_floor=1.0)],
                         ids=["default", "no-leak", "clock-discount"])
def test_code_lengths_are_the_numpy_reference(settings):
    """Symbol by symbol, over a stream that fills its alphabet: the reservoir, the readout's softmax and its
    writing step, the open alphabet."""
    config = ESNConfig(alphabet_cap=5, units=12, connections=3, **settings)
    learner = ESNLearner(config)
    W = _dense(learner.state, config.units)
    rng = np.random.default_rng(4)
    x = np.resize(rng.permutation(5), 300)
    noisy = rng.random(300) < 0.2
    x[noisy] = rng.integers(0, 5, noisy.sum())
    np.testing.assert_allclose(learner.learn(x), naive.esn_bits(x, 5, W, config), rtol=1e-9, atol=1e-10)


def test_the_reservoir_is_sparse_distinct_and_scaled_to_its_spectral_radius():
    config = ESNConfig(units=60, connections=6, spectral_radius=0.9, seed=3)
    state = ESNLearner(config).state
    for row in state.sources:
        assert len(set(row)) == 6 and row.min() >= 0 and row.max() < 60
    W = _dense(state, 60)
    true = np.abs(np.linalg.eigvals(W)).max()
    assert true == pytest.approx(0.9, rel=0.02)  # the power iteration's estimate, against LAPACK's eigenvalues
    assert spectral_radius(state.sources, state.weights, np.zeros(60), np.zeros(60)) == pytest.approx(true, rel=0.02)


def test_the_seed_draws_the_reservoir_and_the_same_seed_the_same_one():
    first, again = ESNLearner(ESNConfig(units=30, seed=5)).state, ESNLearner(ESNConfig(units=30, seed=5)).state
    other = ESNLearner(ESNConfig(units=30, seed=6)).state
    assert np.array_equal(first.sources, again.sources) and np.array_equal(first.weights, again.weights)
    assert not np.array_equal(first.weights, other.weights)


@pytest.mark.parametrize("settings, message", [
    (dict(units=0), "units must be in"), (dict(connections=11, units=10), "connections must be in"),
    (dict(leak=1.0), "leak must be in"), (dict(spectral_radius=float("nan")), "spectral_radius must be a finite"),
    (dict(writing_discount=0.0), "writing_discount must be in"), (dict(units=2.5), "units must be an integer")])
def test_a_bad_setting_is_a_clear_error(settings, message):
    with pytest.raises(ValueError, match=message):
        ESNConfig(**settings)
