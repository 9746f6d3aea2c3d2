"""Batch training of the online learners' models (``seqd.core.training.readout_batch``): the gradient through the
whole sequence against finite differences for every model, the readout's error against NumPy, the rate control's
promise, clipping, and the experiment protocol and CLI."""

from __future__ import annotations

import numpy as np
import pytest

from seqd.core.training.batch import TrainConfig
from seqd.core.training.experiment import TRAINED_MODELS, Experiment, run
from seqd.core.training.readout_batch import (BATCH_MODELS, ReadoutTrainer, log2_likelihood_of, preset_config,
                                              readout_errors)

MODELS = ("gru", "lstm", "scornn", "enrnn", "esn")
LN2 = float(np.log(2.0))


def _trainer(name, seed=0, T=40, A=4, units=5):
    """A small model whose readout is far from its start (there every recurrent gradient is 0: the readout's rows
    but the bias start at 0), on a random sequence with a random mask."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, A, T)
    chi = (rng.random(T) < 0.7).astype(np.float64)
    trainer = ReadoutTrainer(name, preset_config(name, A, units, seed), x, chi)
    readout = trainer.params[trainer.runner.readout_name]
    readout[:, 1:] += rng.standard_normal(readout[:, 1:].shape)
    if "bias" in trainer.params:  # the modReLU's kink away from most z
        trainer.params["bias"][:] = -0.05
    return trainer


@pytest.mark.parametrize("name", MODELS)
def test_the_gradient_through_the_whole_sequence_is_the_finite_difference(name):
    trainer = _trainer(name)
    grads = trainer.gradient()
    assert set(grads) == {trainer.runner.readout_name, *trainer.runner.family.grads}
    eps = 1e-6
    checked = 0
    for grad_name, grad in grads.items():
        param = grad_name.removeprefix("grad_")
        assert np.any(grad != 0.0), grad_name
        # every entry of the small arrays; a spread of them in the large ones
        for k in np.linspace(0, grad.size - 1, min(grad.size, 24)).astype(int):
            plus, minus = trainer.params.copy(), trainer.params.copy()
            plus[param].reshape(-1)[k] += eps
            minus[param].reshape(-1)[k] -= eps
            fd = (log2_likelihood_of(trainer, plus) - log2_likelihood_of(trainer, minus)) * LN2 / (2 * eps)
            assert grad.reshape(-1)[k] == pytest.approx(fd, rel=1e-5, abs=1e-7), (grad_name, k)
            checked += 1
    assert checked >= 24


def test_the_readout_error_is_the_numpy_reference():
    trainer = _trainer("gru", seed=2)
    trainer.gradient()
    st, runner = trainer.runner.state, trainer.runner
    pi = trainer._current.pi
    onehot = np.eye(pi.shape[1])[trainer.symbols]
    want = trainer.chi[1:, None] * ((onehot[1:] - pi[1:]) @ runner.readout[1:, 1:].T)
    got = np.zeros_like(st.dh[:len(trainer.symbols)])
    readout_errors(runner.readout, trainer.codes, trainer.chi, pi, got)
    np.testing.assert_allclose(got[:-1], want, rtol=1e-12, atol=1e-15)
    assert not got[-1].any()


@pytest.mark.parametrize("name", MODELS)
def test_training_never_lowers_the_likelihood_and_learns(name):
    x = np.tile([0, 1, 2, 1], 30)
    trainer = ReadoutTrainer(name, preset_config(name, 3, 8, 0), x)
    start = trainer.log2_likelihood
    trainer.run(steps=30)
    trajectory = [r.log2_likelihood for r in trainer.history]
    assert all(b >= a for a, b in zip([start] + trajectory, trajectory))
    assert trajectory[-1] > start + 40.0  # bits of the 120 symbols' ~180: the period-4 pattern, in part
    parts = {r.part for r in trainer.history}
    assert parts == ({"w"} if name == "esn" else {"w", "tau"})  # the reservoir is never trained
    again = ReadoutTrainer(name, preset_config(name, 3, 8, 0), x)
    again.run(steps=30)
    assert [r.log2_likelihood for r in again.history] == trajectory  # the same bits from the same input


def test_a_recurrent_step_is_clipped():
    """Seed 001, Algorithm 2: the model's update rescales a gradient longer than the clip, so a step at rate 1
    moves the GRU's weights by at most the clip."""
    x = np.tile([0, 1, 2, 1], 30)
    config = TrainConfig(initial_rate=1.0, rate_growth=1.0, clip=1e-3)
    trainer = ReadoutTrainer("gru", preset_config("gru", 3, 6, 0), x, config=config)
    readout = trainer.params["v"]
    readout[:, 1:] += np.random.default_rng(0).standard_normal(readout[:, 1:].shape)
    trainer.loglik = trainer._forward(trainer.params, trainer._current)
    trainer._step("w")
    before = trainer.params.copy()
    record = trainer._step("tau")
    moved = np.sqrt(sum(np.sum((trainer.params[n] - before[n]) ** 2) for n in ("w", "embed")))
    assert record.accepted and 0.0 < moved <= 1e-3 * (1 + 1e-9)


def test_the_experiment_protocol_trains_each_batch_model():
    assert set(BATCH_MODELS) <= set(TRAINED_MODELS)
    for model in BATCH_MODELS:
        exp = Experiment(task="anbn", model=model, method="qdh", units=6, size=4, steps=4, evaluations=2)
        out = run(exp)
        assert out.steps == 4 and out.train_log2_likelihood >= out.trajectory[0]
        assert out.validation_regret == pytest.approx(out.validation_curve[-1]["regret"])
        assert run(exp).validation_regret == out.validation_regret  # a seed gives the same run
    with pytest.raises(ValueError, match="batch-gru trains by qdh"):
        run(Experiment(task="anbn", model="batch-gru", method="rbpm", units=4, size=3, steps=1))


def test_a_sequence_shorter_than_the_alphabet_trains():
    """The recurrent update lists every code of the alphabet once, however short the sequence."""
    for name in ("gru", "scornn"):
        trainer = ReadoutTrainer(name, preset_config(name, 8, 4, 0), np.arange(5) % 8)
        trainer.run(steps=2)
        assert [r.part for r in trainer.history] == ["w", "tau"]


def test_bad_input_is_refused():
    config = preset_config("gru", 3, 4, 0)
    with pytest.raises(ValueError, match="symbols must be in"):
        ReadoutTrainer("gru", config, np.array([0, 5]))
    with pytest.raises(ValueError, match="empty"):
        ReadoutTrainer("gru", config, np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match="no batch trainer"):
        ReadoutTrainer("ctw", config, np.array([0, 1]))
    with pytest.raises(ValueError, match="an ENRNN needs at least 2 units"):
        preset_config("enrnn", 3, 1, 0)
    assert preset_config("enrnn", 3, 2, 0).short == 1 and preset_config("scornn", 3, 2, 0).short == 0


def test_seqd_train_runs_a_batch_model(capsys):
    from seqd.cli import main

    assert main(["train", "--task", "copying", "--length", "3", "--size", "20", "--model", "batch-scornn",
                 "--units", "6", "--steps", "4", "--evaluations", "2", "--clip", "5"]) == 0
    out = capsys.readouterr().out
    assert "copying: batch-scornn (QDH on the readout" in out and "6 units" in out and "4 steps" in out
