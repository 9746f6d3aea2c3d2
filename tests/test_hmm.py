"""Seed 000's HMM sanity check (``seqd.core.hmm``): the kernels against sums over every state path, EM's
promise, and the experiment protocol with ``--model hmm`` and with the online models (``--model lstm`` ...)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from seqd.core.hmm import HMMTrainer, draw
from seqd.core.hmm.baum_welch import expected_counts, forward, predictive
from seqd.core.hmm.trainer import log2_probs
from seqd.core.training.experiment import Experiment, run


def _small(seed=0, N=3, D=2, A=3):
    rng = np.random.default_rng(seed)
    return draw(N, D, rng.random(A) + 0.1, rng)


def _paths(hmm, x):
    """Every state path of ``x`` with its joint probability with x (the definition, no recursion)."""
    N = len(hmm.init)
    a = np.zeros((N, N))
    for i in range(N):
        a[i, hmm.succ[i]] = hmm.trans[i]
    for path in itertools.product(range(N), repeat=len(x)):
        p = hmm.init[path[0]] * hmm.emit[path[0], x[0]]
        for t in range(1, len(x)):
            p *= a[path[t - 1], path[t]] * hmm.emit[path[t], x[t]]
        yield path, p


def test_the_forward_pass_is_the_sum_over_every_state_path():
    hmm, x = _small(), np.array([0, 2, 1, 1, 0, 2], dtype=np.int64)
    total = sum(p for _, p in _paths(hmm, x))
    alpha, scale = np.empty((len(x), 3)), np.empty(len(x))
    assert forward(hmm.succ, hmm.trans, hmm.emit, hmm.init, x, alpha, scale) == pytest.approx(math.log(total),
                                                                                            rel=1e-12)


def test_the_expected_counts_are_the_posterior_expectations_over_every_state_path():
    hmm, x = _small(seed=3), np.array([1, 0, 2, 2, 1], dtype=np.int64)
    N, D = hmm.succ.shape
    edges, writes, first = np.zeros((N, D)), np.zeros((N, 3)), np.zeros(N)
    alpha, scale = np.empty((len(x), N)), np.empty(len(x))
    forward(hmm.succ, hmm.trans, hmm.emit, hmm.init, x, alpha, scale)
    expected_counts(hmm.succ, hmm.trans, hmm.emit, x, alpha, scale, np.empty(2 * N), edges, writes, first)
    want_edges, want_writes, want_first, total = np.zeros((N, D)), np.zeros((N, 3)), np.zeros(N), 0.0
    for path, p in _paths(hmm, x):
        if p == 0.0:  # along a missing edge
            continue
        total += p
        want_first[path[0]] += p
        for t, state in enumerate(path):
            want_writes[state, x[t]] += p
            if t:
                want_edges[path[t - 1], list(hmm.succ[path[t - 1]]).index(state)] += p
    np.testing.assert_allclose(edges, want_edges / total, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(writes, want_writes / total, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(first, want_first / total, rtol=1e-10, atol=1e-14)


def test_the_predictive_probabilities_sum_to_one_and_multiply_to_the_likelihood():
    hmm, x = _small(seed=5, N=4, D=3), np.array([2, 2, 0, 1, 0, 0, 2], dtype=np.int64)
    p = np.empty(len(x))
    predictive(hmm.succ, hmm.trans, hmm.emit, hmm.init, x, np.empty(4), np.empty(4), p)
    assert np.sum(np.log(p)) == pytest.approx(math.log(sum(q for _, q in _paths(hmm, x))), rel=1e-12)
    for t in range(len(x)):  # every next symbol, after the same past
        nxt = [log2_probs(hmm, np.concatenate([x[:t], [y]]), regularize=False)[-1] for y in range(3)]
        assert sum(2.0 ** v for v in nxt) == pytest.approx(1.0, rel=1e-12)


def test_em_never_lowers_the_training_likelihood():
    rng = np.random.default_rng(1)
    x = (np.tile([0, 1, 2, 1], 60) + (rng.random(240) < 0.1)) % 3
    trainer = HMMTrainer(draw(6, 3, np.ones(3), np.random.default_rng(2)), x)
    before = trainer.log2_likelihood
    trainer.run(steps=25)
    values = [before] + [r.log2_likelihood for r in trainer.history]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:]))
    assert values[-1] > values[0] + 100  # and it learned the cycle
    for row in (*trainer.params.trans, *trainer.params.emit):
        assert row.sum() == pytest.approx(1.0)


def test_the_graph_is_seed_000s():
    hmm = draw(20, 5, np.arange(1, 8, dtype=float), np.random.default_rng(4))
    for i, row in enumerate(hmm.succ):
        assert row[0] == i and len(set(row)) == 5 and row.min() >= 0 and row.max() < 20
    np.testing.assert_allclose(hmm.trans.sum(axis=1), 1.0)
    np.testing.assert_allclose(hmm.emit.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="degree must be in"):
        draw(4, 5, np.ones(3), np.random.default_rng(0))


def test_the_protocol_trains_an_hmm_by_em_and_reports_its_regret():
    outcome = run(Experiment(task="anbn", model="hmm", units=6, degree=0, size=3, steps=15, evaluations=4))
    assert outcome.rate_w is None and outcome.steps == 15
    assert outcome.validation_curve[-1]["regret"] < outcome.validation_curve[0]["regret"]
    assert outcome.best_validation_regret <= outcome.validation_regret


@pytest.mark.parametrize("model", ["ctw", "esn", "lstm", "gru", "scornn"])
def test_the_protocol_streams_an_online_model_as_the_papers_ctw_row(model):
    """seqd train --model <online preset>: the training sequence streamed, then the validation sequence scored as
    it is learned: the regret is that of a learner that reads both in turn."""
    from dataclasses import replace

    from seqd.core import learners, tasks

    exp = Experiment(task="anbn", model=model, units=0, size=2, steps=1)
    outcome = run(exp)
    train = tasks.generate("anbn", np.random.default_rng([0, 0]), 2)
    valid = tasks.generate("anbn", np.random.default_rng([0, 1]), 2)
    name, make = learners.PRESETS[model]
    learner = learners.MODELS[name].learner(replace(make(), alphabet_cap=len(train.alphabet)))
    learner.learn(train.symbols)
    want = float(learner.learn(valid.symbols).sum()) + valid.true_log2_likelihood
    assert outcome.validation_regret == pytest.approx(want, rel=1e-12) and outcome.rate_w is None
