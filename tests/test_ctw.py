"""Context-tree weighting (``seqd.core.ctw``) against the dictionary reference of ``naive.ctw_bits``.

The learner's interface (determinism, snapshots, errors, prediction) is held by the contract suite
(``contract.py``: entries ``ctw-*``); here, what it computes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive
from seqd.core.ctw import CTWConfig, CTWLearner
from seqd.core.ctw.config import COUNT_LIMIT


def _stream(cap, n, seed):
    """A motif with noise, so that deep contexts pay and the alphabet fills along the way."""
    rng = np.random.default_rng(seed)
    motif = rng.integers(0, cap, size=7)
    x = np.resize(motif, n)
    noisy = rng.random(n) < 0.2
    x[noisy] = rng.integers(0, cap, noisy.sum())
    return x.astype(np.int64)


@pytest.mark.parametrize("cap, depth, node_bits, alpha", [(2, 1, 16, 0.5), (3, 2, 16, 0.5), (5, 3, 16, 0.5),
                                                          (5, 3, 16, 1 / 16), (4, 4, 4, 0.5)],
                         ids=["binary-depth1", "cap3-depth2", "cap5-depth3", "cap5-alpha16th", "cap4-full-pool"])
def test_code_lengths_are_the_reference_and_sum_to_the_batch_mixture(cap, depth, node_bits, alpha):
    """Symbol by symbol the dictionary reference's code lengths; in all, -log2 of the weighted probability
    of the whole sequence by the batch recursion over the final tree (independent of the sequential
    beta updates), plus the bits naming each first occurrence."""
    x = _stream(cap, 300, seed=cap * 10 + depth)
    bits = CTWLearner(CTWConfig(alphabet_cap=cap, depth=depth, node_bits=node_bits, alpha=alpha)).learn(x)
    pool = (1 << node_bits) if node_bits < 16 else None
    expected, batch_total = naive.ctw_bits(x, cap, depth, pool, alpha)
    np.testing.assert_allclose(bits, expected, rtol=1e-10, atol=1e-12)
    if pool is None:  # a full pool's missing contexts predict uniformly: the batch recursion is not their model
        assert bits.sum() == pytest.approx(batch_total, rel=1e-10)


def test_a_full_pool_adds_no_node_and_keeps_coding():
    learner = CTWLearner(CTWConfig(alphabet_cap=8, depth=6, node_bits=4))
    bits = learner.learn(_stream(8, 2000, seed=1))
    assert learner.stats["nodes"] == learner.stats["node_pool"] == 16
    assert np.all(np.isfinite(bits)) and bits[-500:].mean() < math.log2(8)


def test_a_node_whose_count_reaches_the_limit_halves_its_counts():
    """A stream runs for ever: the root, which counts every symbol, halves its counts (rounding up) at the
    limit instead of overflowing."""
    learner = CTWLearner(CTWConfig(alphabet_cap=4, depth=2))
    learner.learn([0, 1, 2, 3, 0, 1])
    n, total = learner.state.n, learner.state.total
    n[0, 1:5] = [COUNT_LIMIT - 8, 3, 2, 0]
    total[0] = n[0].sum()
    learner.learn([2] * 3)  # code 3: the root's total reaches the limit at the third
    assert list(n[0, 1:5]) == [(COUNT_LIMIT - 8 + 1) // 2, 2, (2 + 3 + 1) // 2, 0]
    assert total[0] == n[0].sum()
    assert np.isfinite(learner.learn([0, 1, 2, 3] * 5)).all()


def test_a_repeated_motif_costs_little_once_learned_and_the_prediction_names_it():
    learner = CTWLearner(CTWConfig(alphabet_cap=6, depth=3))
    bits = learner.learn([5, 0, 3, 1, 2] * 100)
    assert bits[-100:].mean() < 0.05
    assert learner.predict_one() == 5
    proba = learner.predict_proba()
    assert proba.argmax() == 5 and proba.sum() == pytest.approx(1.0, abs=1e-12)
    assert proba[4] == pytest.approx(learner.predict_proba_one()[None])  # the one unseen symbol: the escape's


@pytest.mark.parametrize("settings, message", [
    (dict(depth=0), "depth must be in"), (dict(node_bits=30), "node_bits must be in"),
    (dict(alphabet_cap=0), "alphabet_cap must be in"), (dict(alphabet_cap=65536, node_bits=20), "lower node_bits"),
    (dict(depth=2.5), "depth must be an integer"), (dict(seed=-1), "seed must be"),
    (dict(alpha=0.0), "alpha must be"), (dict(alpha=float("nan")), "alpha must be")])
def test_a_bad_setting_is_a_clear_error(settings, message):
    with pytest.raises(ValueError, match=message):
        CTWConfig(**settings)


def test_a_snapshot_whose_node_table_lies_is_refused_rather_than_followed():
    """A snapshot that passes its checksum but whose table has no empty slot would make a lookup loop for ever,
    and one whose slots name nodes twice would merge contexts: both are refused."""
    from seqd.core.arrays_snapshot import pack
    from seqd.core.ctw.snapshot import MAGIC, VERSION

    learner = CTWLearner(CTWConfig(alphabet_cap=4, depth=2, node_bits=4))
    learner.learn([0, 1, 2, 3, 1, 0])
    full = learner.state._replace(slots=np.arange(len(learner.state.slots)) % learner.state.counts[2])
    twice = learner.state._replace(slots=np.where(learner.state.slots > 1, 1, learner.state.slots))
    for state in (full, twice):
        with pytest.raises(ValueError, match="index outside its arrays"):
            CTWLearner.from_bytes(pack(MAGIC, VERSION, learner.config, state))
    assert CTWLearner.from_bytes(learner.to_bytes()).to_bytes() == learner.to_bytes()

