"""The scoRNN learner (``seqd.core.scornn``) against a NumPy reference, Theorem 2.5.3's gradient against finite
differences, and W's orthogonality.

The learner's interface is held by the contract suite (``contract.py``: entries ``scornn-*``); here, what it
computes.
"""

from __future__ import annotations

import numpy as np
import pytest

import naive
from seqd.core.scornn import SCORNNConfig, SCORNNLearner
from seqd.core.scornn.cayley import cayley, skew_gradient


# (at horizon 3 the no-negatives stream drives the model unstable, 20-bit symbols, where the two ways of
# inverting I + A part by 1e-7 after 180 symbols)
@pytest.mark.parametrize("settings", [dict(), dict(negatives=0, horizon=4), dict(skew_rate=0.0, horizon=1)],
                         ids=["default", "no-negatives", "fixed-w"])
def test_code_lengths_are_the_numpy_reference(settings):
    """Symbol by symbol, over a stream that fills its alphabet: the steps, the softmax, the windows'
    back-propagation, the Cayley steps of A, the open alphabet."""
    config = SCORNNConfig(alphabet_cap=5, units=6, **settings)
    rng = np.random.default_rng(4)
    x = np.resize(rng.permutation(5), 200)
    noisy = rng.random(200) < 0.2
    x[noisy] = rng.integers(0, 5, noisy.sum())
    np.testing.assert_allclose(SCORNNLearner(config).learn(x), naive.scornn_bits(x, 5, config), rtol=1e-8,
                               atol=1e-10)


def test_the_skew_gradient_is_the_finite_difference_through_the_cayley_transform():
    """Theorem 2.5.3: for L(W) = sum G * W (any G), dL/dA_ij (A_ji = -A_ij moving with it) is (V^T - V)_ij."""
    N = 5
    rng = np.random.default_rng(1)
    M = rng.normal(size=(N, N))
    A, d, G = (M - M.T) / 2, np.array([1.0, -1.0, 1.0, -1.0, -1.0]), rng.normal(size=(N, N))
    inverse, w, work = np.zeros((N, 2 * N)), np.zeros((N, N)), np.zeros((2, N, N))
    cayley(A, d, inverse, w)
    np.testing.assert_allclose(w, naive.cayley(A, d), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(inverse[:, N:], np.linalg.inv(np.eye(N) + A), rtol=1e-12, atol=1e-14)
    skew_gradient(G, inverse, w, d, work)
    eps = 1e-6
    for i in range(N):
        for j in range(N):
            if i == j:
                continue
            step = np.zeros((N, N))
            step[i, j], step[j, i] = eps, -eps
            fd = (np.sum(G * naive.cayley(A + step, d)) - np.sum(G * naive.cayley(A - step, d))) / (2 * eps)
            # the theorem's dL/dA_ij is along E_ij - E_ji (A_ji moves with A_ij), as its proof takes it
            assert work[1, i, j] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_w_stays_orthogonal_and_a_skew_symmetric_while_it_learns():
    learner = SCORNNLearner(SCORNNConfig(alphabet_cap=16, units=12, negatives=5, skew_rate=0.5))
    rng = np.random.default_rng(2)
    learner.learn(rng.integers(0, 16, 3000))
    st = learner.state
    assert np.abs(st.w @ st.w.T - np.eye(12)).max() < 1e-10
    assert np.array_equal(st.skew, -st.skew.T) and np.abs(st.skew).max() > 0.0
    assert list(st.signs[:5]) == [-1.0] * 5 and list(st.signs[5:]) == [1.0] * 7


@pytest.mark.parametrize("settings, message", [
    (dict(units=0), "units must be in"), (dict(negatives=9, units=8), "negatives must be in"),
    (dict(skew_rate=-1.0), "skew_rate in"), (dict(horizon=0), "horizon must be in")])
def test_a_bad_setting_is_a_clear_error(settings, message):
    with pytest.raises(ValueError, match=message):
        SCORNNConfig(**settings)
