"""The rehearsing GLNN (``seqd.core.rehearsal``) against independent computations: its predictions against the
NumPy forward pass and a Bayesian mixture written out, its networks' drawing against ``model.initialize``, a
rehearsal against seed 000's batch trainer stepping on the block, and the points of the stream where it
rehearses.

The learner's interface (determinism, snapshots, errors, prediction) is held by the contract suite
(``contract.py``: entries ``rehearsal-*`` and ``preset-rehearsal``); here, what it computes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import naive
from seqd.core import tasks
from seqd.core.model import ModelSpec, initialize, symbol_frequencies
from seqd.core.online import OnlineConfig, OnlineLearner
from seqd.core.rehearsal import RehearsalConfig, RehearsalLearner
from seqd.core.rehearsal.config import COMPLETE, DRAWN, HEAD, REHEARSALS
from seqd.core.rehearsal.state import params_of
from seqd.core.rehearsal.stream import rehearsal_block
from seqd.core.training.batch import BatchTrainer, TrainConfig

SMALL = RehearsalConfig(alphabet_cap=5, units=4, degree=3, groups=3, draws=2, block=200, blocks=2, rehearsals=4)


def _stream(n: int, cap: int = 5, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.resize(rng.permutation(cap), n)
    noisy = rng.random(n) < 0.3
    x[noisy] = rng.integers(0, cap, noisy.sum())
    return x


def _reference_bits(config: RehearsalConfig, state, x: np.ndarray) -> np.ndarray:
    """Code lengths of ``x`` with the networks fixed (no block completes): each network's forward pass over the
    whole stream (naive.forward), (1 - share) of its softmax and share of the uniform, and, if it is a member,
    the glnn preset's online learner on its own; each group's members mixed by 2^-(the code length of the
    positions the group predicted before)."""
    A, G, K, share = config.alphabet_cap, min(config.groups, config.alphabet_cap), config.draws, config.uniform_share
    pis = [naive.forward(x, np.ones(len(x)), state.w[n], state.tau[n], np.zeros((A, config.units + 1)), state.v0[n],
                         state.inputs[n], 1.0, True, config.activation)[2] for n in range(config.networks)]
    online = 2.0 ** -OnlineLearner(OnlineConfig(alphabet_cap=A, seed=config.seed)).learn(x) if config.online else None
    previous = np.concatenate(([0], x[:-1])) % G
    log_weight = np.zeros((G, config.members))
    bits = np.empty(len(x))
    for t, (g, s) in enumerate(zip(previous, x)):
        p = [(1 - share) * pis[g * K + k][t][s] + share / A for k in range(K)] + ([online[t]] if config.online else [])
        beta = np.exp(log_weight[g] - log_weight[g].max())
        bits[t] = -np.log2((beta @ p) / beta.sum())
        log_weight[g] += np.log(p)
    return bits


@pytest.mark.parametrize("settings", [dict(), dict(activation="logistic"), dict(online=False)],
                         ids=["tanh", "logistic", "networks-alone"])
def test_code_lengths_are_the_members_mixture(settings):
    """Before any block completes: every network's GLNN forward pass (eqs. 6, 13) over the stream and the online
    learner, each group's members in their Bayesian mixture."""
    config = replace(SMALL, block=1000, **settings)
    learner = RehearsalLearner(config)
    x = _stream(400)
    expected = _reference_bits(config, learner.state, x)
    np.testing.assert_allclose(learner.learn(x), expected, rtol=1e-10, atol=1e-12)


def test_the_first_block_draws_the_networks_from_its_frequencies():
    """At the first block's end: network n of group g is model.initialize from the generator (seed, n), with the
    frequencies of the block's positions that follow a symbol of g (eqs. 30-33)."""
    learner = RehearsalLearner(SMALL)
    x = _stream(SMALL.block)
    learner.learn(x)
    st = learner.state
    assert st.counts[DRAWN] == 1 and st.counts[COMPLETE] == 1
    spec = ModelSpec("glnn", SMALL.units, SMALL.degree, SMALL.activation, SMALL.alphabet_cap)
    previous = np.concatenate(([0], x[:-1])) % 3
    for n in range(SMALL.networks):
        chi = (previous == n // SMALL.draws).astype(float)
        p = initialize(spec, *symbol_frequencies(x, chi, 5), np.random.default_rng([SMALL.seed, n]))
        np.testing.assert_array_equal(st.inputs[n], p.inputs)
        np.testing.assert_array_equal(st.w[n], p.writing_weights)
        np.testing.assert_array_equal(st.tau[n], p.transition_weights)
        np.testing.assert_array_equal(st.v0[n], p.initial_potential)
    np.testing.assert_array_equal(st.v[:, 1:], st.v0[:, 1:])  # every network starts again at V^0


def test_a_rehearsal_is_seed_000s_two_batch_steps_on_the_block():
    """The first rehearsal: each network's w step then tau step (seed 000 §2, QDH + RBPM, rates from 1/N) on the
    buffered block, chi = the positions its group predicts; a second carries the rates on."""
    learner = RehearsalLearner(SMALL)
    x = _stream(SMALL.block + 2 * SMALL.interval)
    learner.learn(x[:SMALL.block])
    drawn = [params_of(learner.state, n).copy() for n in range(SMALL.networks)]
    learner.learn(x[SMALL.block:SMALL.block + SMALL.interval])
    assert learner.state.counts[REHEARSALS] == 1
    spec = ModelSpec("glnn", SMALL.units, SMALL.degree, SMALL.activation, SMALL.alphabet_cap)
    block = x[:SMALL.block]
    previous = np.concatenate(([0], block[:-1])) % 3
    rates = []
    for n in range(SMALL.networks):
        trainer = BatchTrainer(spec, drawn[n], block, (previous == n // SMALL.draws).astype(float), TrainConfig("rbpm"))
        trainer.run(steps=2)
        rates.append((trainer.rate_w, trainer.rate_tau))
        got = params_of(learner.state, n)
        for name in ("writing_weights", "transition_weights", "initial_potential"):
            np.testing.assert_array_equal(getattr(got, name), getattr(trainer.params, name), err_msg=name)
    np.testing.assert_array_equal(learner.state.rates, rates)


def test_rehearsals_come_at_fixed_points_over_the_blocks_in_turn():
    """One rehearsal every block / rehearsals symbols once a block is complete, on the complete blocks in turn,
    oldest first, the ring keeping the last ``blocks``."""
    config = replace(SMALL, units=2, degree=1, groups=1, draws=1, block=64, blocks=2, rehearsals=2)
    learner = RehearsalLearner(config)
    taken = []
    for n in range(1, 64 * 6 + 1):
        learner.learn([n % 5])
        c = learner.state.counts
        assert c[REHEARSALS] == max(0, (n - 64) // 32)
        if n > 64 and (n - 64) % 32 == 0:  # a rehearsal just now: the row it took, from the state it left
            taken.append(int(((c[HEAD] - c[COMPLETE]) % 3 + (c[REHEARSALS] - 1) % c[COMPLETE]) % 3))
    # blocks complete at symbols 64, 128, 192, ... into rows 0, 1, 2, 0, ...; from 192 on the ring keeps two
    assert taken == [0, 1, 0, 2, 1, 0, 2, 1, 0, 2]
    assert rehearsal_block(c, 3) == 1  # the next: the older of rows 1 (block 5) and 2 (block 6)


def test_learns_what_follows_each_symbol_distant_xor():
    """Distant XOR with T = 3, streamed once with rehearsals: the answers' error ends below 10 % (the chance
    level is 50 %), where the GLNN preset streamed once stays at chance on T = 20 (docs/benchmarks.md)."""
    train = tasks.generate("xor", np.random.default_rng([0, 0]), 1500, length=3)
    config = RehearsalConfig(alphabet_cap=len(train.alphabet), units=6, degree=6, draws=1, block=1024, blocks=4,
                             rehearsals=16)
    bits = RehearsalLearner(config).learn(train.symbols)
    answers = train.predict_mask != 0
    last = np.flatnonzero(answers)[-300:]
    assert np.mean(bits[last] >= 1.0) < 0.10
