"""Seed 000's batch-trained LSTM (``seqd.core.training.lstm``): the forward pass against a dense NumPy reference, the
back-propagated gradient against finite differences, the rate control's promise, and the experiment protocol."""

from __future__ import annotations

import numpy as np
import pytest

from seqd.core.training import lstm as batch
from seqd.core.training.batch import TrainConfig
from seqd.core.training.experiment import TRAINED_MODELS, Experiment, run

import naive

PARTS = ("writing_weights", "gate_weights", "input_weights", "peepholes")


def _problem(seed=0, N=5, degree=3, A=4, T=60, scale=5.0):
    """A small LSTM with weights large enough that every gate is far from its linear regime."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, A, T)
    nu = (np.bincount(x, minlength=A) + 0.5) / (T + A / 2)
    p = batch.initialize(N, degree, nu, rng)
    for name in PARTS:
        getattr(p, name)[...] *= scale
    chi = (rng.random(T) < 0.8).astype(np.float64)
    return p, x, chi


def test_the_forward_pass_is_the_dense_reference():
    p, x, chi = _problem()
    b = batch.Buffers.allocate(len(x), p.units, p.alphabet_size)
    got = batch.log_likelihood(p, x, chi, b)
    want, pis = naive.batch_lstm_log_likelihood(p.inputs, p.writing_weights, p.gate_weights, p.input_weights,
                                                p.peepholes, x, chi)
    assert got == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(b.pi, pis, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_gradient_is_the_finite_difference(seed):
    p, x, chi = _problem(seed)
    g = batch.gradient(p, x, chi)
    eps = 1e-6
    for name in PARTS:
        arr, grad = getattr(p, name), getattr(g, name)
        for idx in np.ndindex(arr.shape):
            plus, minus = p.copy(), p.copy()
            getattr(plus, name)[idx] += eps
            getattr(minus, name)[idx] -= eps
            fd = (batch.log_likelihood(plus, x, chi) - batch.log_likelihood(minus, x, chi)) / (2 * eps)
            assert grad[idx] == pytest.approx(fd, abs=2e-7), (name, idx)


def test_unit_zero_is_not_a_cell():
    p, x, chi = _problem()
    g = batch.gradient(p, x, chi)
    assert not g.gate_weights[:, 0].any() and not g.input_weights[:, :, 0].any() and not g.peepholes[:, 0].any()
    fresh = batch.initialize(6, 3, np.full(3, 1 / 3), np.random.default_rng(0))
    assert not fresh.gate_weights[:, 0].any() and np.all(np.abs(fresh.gate_weights) <= batch.INIT_SCALE)
    np.testing.assert_allclose(fresh.writing_weights[0], np.log(np.full(3, 1 / 3)))


@pytest.mark.parametrize("method", ["plain", "dhfb"])
def test_training_never_lowers_the_likelihood_and_learns(method):
    rng = np.random.default_rng(3)
    x = np.tile([0, 1, 2, 1], 40)
    p = batch.initialize(4, 2, np.bincount(x) / len(x), rng)
    trainer = batch.LSTMTrainer(p, x, method=method)
    start = trainer.log2_likelihood
    trainer.run(steps=200)
    trajectory = [r.log2_likelihood for r in trainer.history]
    assert all(b >= a for a, b in zip([start] + trajectory, trajectory))
    assert start < -200.0 and trajectory[-1] > -10.0  # bits: the period-4 pattern is learned
    assert {r.part for r in trainer.history} == {"w", "tau"}


def test_bad_input_is_refused():
    p, x, chi = _problem()
    with pytest.raises(ValueError, match="method must be one of plain, dhfb"):
        batch.LSTMTrainer(p, x, method="rbpm")
    with pytest.raises(ValueError, match="symbols must be in"):
        batch.LSTMTrainer(p, np.array([0, 9]))
    with pytest.raises(ValueError, match="empty"):
        batch.LSTMTrainer(p, np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match="predict_mask"):
        batch.LSTMTrainer(p, x, chi[:-1])
    with pytest.raises(ValueError, match="degree"):
        batch.initialize(3, 4, np.full(2, 0.5), np.random.default_rng(0))
    with pytest.raises(ValueError, match="positive frequency"):
        batch.initialize(3, 2, np.array([1.0, 0.0]), np.random.default_rng(0))
    for call in (batch.log_likelihood, batch.gradient, batch.evaluate):  # what a kernel would index with
        with pytest.raises(ValueError, match="symbols must be in"):
            call(p, np.array([0, -1]))
        with pytest.raises(ValueError, match="predict_mask"):
            call(p, x, chi[:3])


def test_the_experiment_protocol_trains_the_batch_lstm():
    assert "batch-lstm" in TRAINED_MODELS
    exp = Experiment(task="anbn", model="batch-lstm", method="dhfb", units=4, size=30, steps=6, evaluations=3)
    out = run(exp)
    assert out.steps == 6 and len(out.validation_curve) >= 2
    assert out.validation_regret == pytest.approx(out.validation_curve[-1]["regret"])
    assert out.train_log2_likelihood >= out.trajectory[0]
    again = run(exp)
    assert again.validation_regret == out.validation_regret  # a seed gives the same run


def test_the_evaluation_is_the_regularised_reference():
    p, x, chi = _problem()
    ev = batch.evaluate(p, x, chi, true_log2_likelihood=-10.0)
    _, pis = naive.batch_lstm_log_likelihood(p.inputs, p.writing_weights, p.gate_weights, p.input_weights,
                                             p.peepholes, x, chi)
    lp = naive.regularized_log2_probs(x, pis)
    assert ev.log2_likelihood == pytest.approx(float(np.sum(chi * lp)), rel=1e-12)
    assert ev.regret == pytest.approx(-10.0 - ev.log2_likelihood)
    with pytest.raises(ValueError, match="method"):
        batch.LSTMTrainer(p, x, config=TrainConfig(), method="qdrbpm")


def test_clipping_bounds_every_step_of_both_batch_trainers():
    """Seed 001, Algorithm 2 in the rate-controlled trainers: a kept step moves the parameters by at most
    rate x clip (Euclidean norm over the step's parameters)."""
    from seqd.core.model import ModelSpec, initialize, symbol_frequencies
    from seqd.core.training.batch import BatchTrainer

    x = np.tile([0, 1, 2, 1], 40)
    config = TrainConfig(initial_rate=1.0, rate_growth=1.0, clip=1e-3)
    p = batch.initialize(4, 2, np.bincount(x) / len(x), np.random.default_rng(3))
    spec = ModelSpec("glnn", 4, 2, "tanh", 3)
    q = initialize(spec, *symbol_frequencies(x, None, 3), np.random.default_rng(3))
    for trainer, parts in ((batch.LSTMTrainer(p, x, method="plain", config=config), PARTS),
                           (BatchTrainer(spec, q, x, config=TrainConfig(method="dhfb", initial_rate=1.0,
                                                                        rate_growth=1.0, clip=1e-3)),
                            ("writing_weights", "transition_weights", "initial_potential"))):
        for _ in range(6):
            before = trainer.params.copy()
            record = trainer._step("w" if trainer.steps % 2 == 0 else "tau")
            moved = np.sqrt(sum(np.sum((getattr(trainer.params, n) - getattr(before, n)) ** 2) for n in parts))
            assert record.accepted and 0.0 < moved <= 1e-3 * (1 + 1e-12)
    with pytest.raises(ValueError, match="clip must be"):
        TrainConfig(clip=-1.0)
