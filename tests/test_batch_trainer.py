"""The batch trainer of seed 000 §2: alternation, learning-rate control, budgets and errors."""

from __future__ import annotations

import numpy as np
import pytest

from seqd.core import tasks
from seqd.core.model import ModelSpec, initialize, symbol_frequencies
from seqd.core.training.batch import BatchTrainer, TrainConfig, evaluate
from seqd.core.training.methods import METHODS


def _trainer(method="rbpm", model="glnn", rate=None, task="music", size=8):
    seq = tasks.generate(task, np.random.default_rng(11), size)
    A = len(seq.alphabet)
    spec = ModelSpec(model, 7, 3, "tanh", A)
    nu, nu_tilde = symbol_frequencies(seq.symbols, seq.predict_mask, A)
    params = initialize(spec, nu, nu_tilde, np.random.default_rng(2))
    return BatchTrainer(spec, params, seq.symbols, seq.predict_mask, TrainConfig(method=method, initial_rate=rate)), seq


@pytest.mark.parametrize("method", [m for m in METHODS])
def test_rate_control_never_keeps_a_degrading_step(method):
    model = "rnn" if method in ("qdruop",) else "glnn"
    # a huge initial rate forces rejections
    trainer, _ = _trainer(method, model, rate=50.0)
    before = trainer.log2_likelihood
    trainer.run(steps=16)
    values = [before] + [r.log2_likelihood for r in trainer.history]
    assert all(b >= a for a, b in zip(values, values[1:]))
    assert any(r.retries > 0 for r in trainer.history)
    assert trainer.log2_likelihood > before


def test_rates_halve_on_rejection_and_grow_on_acceptance():
    trainer, _ = _trainer(rate=50.0)
    rates = {"w": 50.0, "tau": 50.0}
    for _ in range(10):
        rec = trainer.step_writing() if trainer.steps % 2 == 0 else trainer.step_transition()
        expected = rates[rec.part] * 0.5**rec.retries * (1.1 if rec.accepted else 1.0)
        assert rec.rate == pytest.approx(expected, rel=1e-12)
        rates[rec.part] = rec.rate


def test_alternation_starts_with_writing_weights():
    trainer, _ = _trainer()
    trainer.run(steps=5)
    assert [r.part for r in trainer.history] == ["w", "tau", "w", "tau", "w"]


def test_trained_parameters_score_the_training_sequence_as_the_trainer_says():
    trainer, seq = _trainer()
    trainer.run(steps=6)
    ev = evaluate(trainer.spec, trainer.params, seq.symbols, seq.predict_mask, regularize=False)
    assert ev.log2_likelihood == pytest.approx(trainer.log2_likelihood, rel=1e-12)


def test_regularized_validation_matches_the_formula():
    trainer, seq = _trainer()
    ev = evaluate(trainer.spec, trainer.params, seq.symbols, seq.predict_mask, seq.true_log2_likelihood)
    raw = evaluate(trainer.spec, trainer.params, seq.symbols, seq.predict_mask, regularize=False)
    t = np.arange(len(seq))
    lam = 1.0 / (t + 2.0)
    expected = np.log2((1 - lam) * 2.0 ** raw.log2_probs + lam / len(seq.alphabet))
    np.testing.assert_allclose(ev.log2_probs, expected, rtol=1e-12)
    assert ev.regret == pytest.approx(seq.true_log2_likelihood - ev.log2_likelihood)


def test_budgets_and_errors():
    trainer, seq = _trainer()
    with pytest.raises(ValueError, match="budget"):
        trainer.run()
    trainer.run(seconds=0.0)
    assert trainer.steps == 0
    spec = trainer.spec
    with pytest.raises(ValueError, match="symbols must be in"):
        BatchTrainer(spec, trainer.params, np.array([0, spec.alphabet_size]))
    with pytest.raises(ValueError, match="empty"):
        BatchTrainer(spec, trainer.params, np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match="quadratic in the alphabet"):
        _trainer("rbpm", "rnn")
    with pytest.raises(ValueError, match="method must be one of"):
        _trainer("adam")
