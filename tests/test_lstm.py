"""The LSTM learner (``seqd.core.lstm``) against a NumPy reference, and its window's gradient against finite
differences.

The learner's interface (determinism, snapshots, errors, prediction) is held by the contract suite
(``contract.py``: entries ``lstm-*``); here, what it computes.
"""

from __future__ import annotations

import numpy as np
import pytest

import naive
from seqd.core.lstm import LSTMConfig, LSTMLearner
from seqd.core.lstm.cell import forward, window_gradient
from seqd.core.lstm.config import FILLED
from seqd.core.lstm.gru import gru_forward, gru_window_gradient


def _stream(cap, n, seed):
    rng = np.random.default_rng(seed)
    x = np.resize(rng.permutation(cap), n)
    noisy = rng.random(n) < 0.2
    x[noisy] = rng.integers(0, cap, noisy.sum())
    return x


@pytest.mark.parametrize("settings", [dict(), dict(layers=2), dict(layers=3, horizon=4, clip=0.05),
                                      dict(horizon=1, learning_rate=0.5), dict(cell="gru"),
                                      dict(cell="gru", layers=3, horizon=4, clip=0.05)],
                         ids=["one-layer", "two-layers", "three-layers-clipped", "horizon-1", "gru",
                              "gru-three-layers-clipped"])
def test_code_lengths_are_the_numpy_reference(settings):
    """Symbol by symbol, over a stream that fills its alphabet: the cells, the softmax and its steps, the
    windows' back-propagation and updates, clipping, the open alphabet."""
    config = LSTMConfig(alphabet_cap=5, cells=6, **settings)
    x = _stream(5, 160, 4)
    learner = LSTMLearner(config)
    np.testing.assert_allclose(learner.learn(x), naive.lstm_bits(x, 5, config), rtol=1e-9, atol=1e-10)
    if config.clip:
        assert learner.stats["gradient_norm"] > config.clip  # the clipped branch was taken


def test_the_clip_only_rescales_long_gradients():
    x = _stream(5, 160, 4)
    plain = LSTMLearner(LSTMConfig(alphabet_cap=5, cells=6)).learn(x)
    assert np.array_equal(plain, LSTMLearner(LSTMConfig(alphabet_cap=5, cells=6, clip=1e6)).learn(x))
    assert not np.array_equal(plain, LSTMLearner(LSTMConfig(alphabet_cap=5, cells=6, clip=1e-3)).learn(x))


@pytest.mark.parametrize("cell, layers", [("lstm", 1), ("lstm", 2), ("gru", 1), ("gru", 2)])
def test_the_window_gradient_is_the_finite_difference_of_its_log_likelihood(cell, layers):
    """The kernel's back-propagation against central differences of the window's log-likelihood (nats) in every
    weight of the cells and in the rows of the codes read, the softmax held fixed."""
    cap, N, H = 4, 3, 5
    config = LSTMConfig(alphabet_cap=cap, cell=cell, cells=N, layers=layers, horizon=H, init_scale=0.6, seed=2)
    step, step_kernel, gradient_kernel = ((naive.gru_step, gru_forward, gru_window_gradient) if cell == "gru"
                                          else (naive.lstm_step, forward, window_gradient))
    learner = LSTMLearner(config)
    learner.learn([0, 1, 2, 3, 1, 0, 2])  # codes for every symbol, a state mid-stream
    st = learner.state
    rng = np.random.default_rng(7)
    st.v[...] = rng.normal(size=st.v.shape)
    st.embed[:, :, 1:] = rng.normal(scale=0.5, size=st.embed[:, :, 1:].shape)
    codes, targets = [3, 1, 1, 4, 2], [1, 1, 4, 2, 3]
    h0, c0 = st.hs[st.counts[FILLED]].copy(), st.cs[st.counts[FILLED]].copy()
    v = st.v.copy()

    def log_likelihood(w, embed):
        h, c, total = h0.copy(), c0.copy(), 0.0
        for code, target in zip(codes, targets):
            h, c, _ = step(w, embed, code, h, c)
            logits = np.concatenate(([1.0], h.ravel())) @ v[:, :cap + 1]
            total += logits[target] - np.log(np.exp(logits - logits.max()).sum()) - logits.max()
        return total

    st.hs[0], st.cs[0] = h0, c0
    st.counts[FILLED] = 0
    st.grad_w[...] = 0.0
    st.grad_embed[...] = 0.0
    for s, (code, target) in enumerate(zip(codes, targets)):
        step_kernel(st, code)
        logits = st.a @ v[:, :cap + 1]
        p = np.exp(logits - logits.max())
        p /= p.sum()
        st.dh[s] = v[1:, :cap + 1] @ (np.eye(cap + 1)[target] - p)
    gradient_kernel(st)
    w, embed = st.w.copy(), [st.embed[layer].copy() for layer in range(layers)]
    eps = 1e-6
    for index in np.ndindex(w.shape):
        if layers == 1 or index[0] > 0 or index[3] <= N:  # the first layer has no input from below
            up, down = w.copy(), w.copy()
            up[index] += eps
            down[index] -= eps
            fd = (log_likelihood(up, embed) - log_likelihood(down, embed)) / (2 * eps)
            assert st.grad_w[index] == pytest.approx(fd, rel=1e-5, abs=1e-8), index
    for layer in range(layers):
        for q in range(st.w.shape[1]):
            for code in sorted(set(codes)):
                for j in range(N):
                    up, down = [e.copy() for e in embed], [e.copy() for e in embed]
                    up[layer][q, code, j] += eps
                    down[layer][q, code, j] -= eps
                    fd = (log_likelihood(w, up) - log_likelihood(w, down)) / (2 * eps)
                    assert st.grad_embed[layer, q, code, j] == pytest.approx(fd, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_it_learns_a_stream_it_has_seen(cell):
    """A repeated phrase gets cheap: the last pass costs a fraction of the first."""
    phrase = list(b"the cat sat on the mat; ")
    bits = LSTMLearner(LSTMConfig(cell=cell, cells=16, learning_rate=0.3)).learn(phrase * 40)
    n = len(phrase)
    assert bits[-n:].sum() < 0.15 * bits[:n].sum()


@pytest.mark.parametrize("settings, message", [
    (dict(cells=0), "cells must be in"), (dict(cell="rnn"), "cell must be one of lstm, gru"), (dict(layers=9), "layers must be in"), (dict(horizon=0), "horizon must be"),
    (dict(learning_rate=0.0), "learning_rate must be in"), (dict(clip=-1.0), "clip must be >= 0"),
    (dict(learning_rate=float("inf")), "learning_rate must be a finite"), (dict(cells=2.5), "cells must be an integer")])
def test_a_bad_setting_is_a_clear_error(settings, message):
    with pytest.raises(ValueError, match=message):
        LSTMConfig(**settings)
