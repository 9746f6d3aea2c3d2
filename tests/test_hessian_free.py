"""Hessian-free optimisation (``seqd.core.training.hessian_free``): the gradient against finite differences, the
curvature products against the Gauss-Newton and structural-damping matrices built from finite-difference
Jacobians (through ``naive.forward``), and the trainer's promise."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from seqd.core import tasks
from seqd.core.model import ModelSpec, initialize, symbol_frequencies
from seqd.core.training.experiment import Experiment, run
from seqd.core.training.hessian_free import PARTS, HessianFreeTrainer, HFConfig


def _trainer(model, seed=0, N=4, d=3, A=3, T=40, **settings):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, A, T)
    chi = (rng.random(T) < 0.7).astype(np.float64)
    spec = ModelSpec(model, N, d, "tanh", A)
    params = initialize(spec, *symbol_frequencies(x, chi, A), rng)
    params.transition_weights[...] += 0.3 * rng.normal(size=params.transition_weights.shape)
    params.writing_weights[...] += 0.3 * rng.normal(size=params.writing_weights.shape)
    return HessianFreeTrainer(spec, params, x, chi, HFConfig(curvature_fraction=1.0, **settings)), spec


def _outputs(trainer, flat):
    """(logits z (T, A), activities a (T+1, N+1)) of the parameters theta + flat, by NumPy."""
    p = trainer._shifted(flat)
    s = trainer.spec
    _, a, _, _ = naive.forward(trainer.symbols, trainer.chi, p.writing_weights, p.transition_weights,
                               p.input_weights, p.initial_potential, p.inputs, s.leak, s.gated, s.activation)
    return a[:-1] @ p.writing_weights, a


@pytest.mark.parametrize("model", ["rnn", "glnn"])
def test_the_gradient_is_the_finite_difference(model):
    trainer, _ = _trainer(model)
    g = trainer.gradient()
    eps = 1e-6
    for k in np.flatnonzero(np.ones_like(g)):
        step = np.zeros_like(g)
        step[k] = eps
        f = [-naive.forward(trainer.symbols, trainer.chi, *(lambda p: (p.writing_weights, p.transition_weights,
                                                                       p.input_weights, p.initial_potential,
                                                                       p.inputs))(trainer._shifted(sign * step)),
                            trainer.spec.leak, trainer.spec.gated, trainer.spec.activation)[3] / trainer.scored
             for sign in (1, -1)]
        assert g[k] == pytest.approx((f[0] - f[1]) / (2 * eps), abs=1e-7)


@pytest.mark.parametrize("model", ["rnn", "glnn"])
def test_the_curvature_product_is_the_gauss_newton_and_structural_matrices(model):
    """(J^T H J + mu lambda J_a^T J_a) v / n + lambda v, with J and J_a the logits' and the hidden activities'
    Jacobians by central differences, H the softmax cross-entropy's Hessian in the logits, weighted by chi."""
    trainer, _ = _trainer(model, structural=0.5)
    n_params = len(trainer.gradient())
    z0, a0 = _outputs(trainer, np.zeros(n_params))
    eps = 1e-6
    J = np.zeros(z0.shape + (n_params,))
    Ja = np.zeros(a0[:-1, 1:].shape + (n_params,))  # the activities the steps read (a^0 .. a^{T-1})
    for k in range(n_params):
        step = np.zeros(n_params)
        step[k] = eps
        (zp, ap), (zm, am) = _outputs(trainer, step), _outputs(trainer, -step)
        J[..., k] = (zp - zm) / (2 * eps)
        Ja[..., k] = (ap[:-1, 1:] - am[:-1, 1:]) / (2 * eps)
    G = np.zeros((n_params, n_params))
    for t in range(len(trainer.symbols)):
        p = trainer.pi[t]
        G += trainer.chi[t] * J[t].T @ (np.diag(p) - np.outer(p, p)) @ J[t]
    S = np.einsum("tik,til->kl", Ja, Ja)
    lam, mu = 0.7, 0.5
    v = np.random.default_rng(1).normal(size=n_params)
    want = (G @ v + mu * lam * S @ v) / trainer.scored + lam * v  # (the slice is the whole sequence here)
    np.testing.assert_allclose(trainer.curvature(v, lam), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(trainer.curvature(v, 0.0), G @ v / trainer.scored, rtol=1e-5, atol=1e-7)


def test_a_step_never_raises_the_loss_and_the_trainer_learns():
    seq = tasks.generate("anbn", np.random.default_rng([0, 0]), 3)
    spec = ModelSpec("rnn", 6, 6, "tanh", len(seq.alphabet))
    params = initialize(spec, *symbol_frequencies(seq.symbols, seq.predict_mask, spec.alphabet_size),
                        np.random.default_rng(0))
    trainer = HessianFreeTrainer(spec, params, seq.symbols, seq.predict_mask, HFConfig(curvature_fraction=0.5))
    start = trainer.log2_likelihood
    trainer.run(steps=12)
    values = [start] + [r.log2_likelihood for r in trainer.history]
    assert all(b >= a for a, b in zip(values, values[1:]))
    assert values[-1] > start + 0.2 * abs(start)
    assert all(r.part == "hf" and r.retries >= 1 for r in trainer.history)


def test_the_experiment_protocol_runs_hessian_free_and_refuses_bad_settings():
    out = run(Experiment(task="xor", model="rnn", method="hf", units=5, degree=5, size=40, length=6, steps=3,
                         evaluations=2))
    assert out.steps == 3 and out.rate_w > 0.0 and out.validation_error_rate is not None
    with pytest.raises(ValueError, match="HFConfig"):
        HFConfig(curvature_fraction=0.0)
    trainer, spec = _trainer("rnn")
    with pytest.raises(ValueError, match="score some symbol"):
        HessianFreeTrainer(spec, trainer.params, trainer.symbols, np.zeros(len(trainer.symbols)))
    assert set(PARTS) == {"writing_weights", "transition_weights", "input_weights", "initial_potential"}
