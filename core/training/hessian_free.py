"""Hessian-free optimisation with structural damping (Martens and Sutskever 2011; seed 001, §2.2.2), for the
models of ``model.py``: the comparator seed 000 cites on distant XOR (its RNN row there is [MS11]'s).

Each step minimises a damped quadratic model of the loss f (minus eq. 16's log-likelihood, per scored
symbol) around theta (seed 001, eqs. 2.13 and 2.21),

    M(delta) = f + g^T delta + 1/2 delta^T G delta,   minimised with  (G + lambda I + lambda mu S) delta = -g,

G the generalised Gauss-Newton matrix J^T H_L J (eq. 2.17: J the Jacobian of the outputs' logits in theta,
H_L the softmax cross-entropy's Hessian in the logits, diag(pi) - pi pi^T), lambda Tikhonov's damping
(eq. 2.18) and S the structural damping's Gauss-Newton matrix J_a^T J_a of the hidden activities'
change (eq. 2.21 with D the squared distance between the hidden state sequences).  Matrix-vector
products with G and S take one forward pass in direction v (the R operator: ``r_forward``) and one
back-propagation (``gn_backward``); the system is solved approximately by conjugate gradients, started
from 0.95 times the previous step, stopped by Martens's relative-progress rule, and the best of its
iterates on the true loss is taken (CG backtracking); lambda follows the Levenberg-Marquardt rule
(eqs. 2.19-2.20, the reduction ratio against eq. 2.13's undamped quadratic) and a step that does not
lower f is shortened (0.8^k) or refused.

The gradient is over the whole training sequence; the curvature products over a contiguous slice of it
(``curvature_fraction``, the next slice at each step, its first state taken from the full pass), as
[MS11]'s curvature minibatches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..jit import kernel
from ..kernels.activation import slope
from ..kernels.backward import NO_MODULUS, Backprop, Scored, backward
from ..kernels.forward import allocate, forward
from ..kernels.transition import TransitionSums, accumulate_transition
from ..kernels.writing import accumulate_writing
from ..model import ModelSpec, Params, network
from .batch import LN2, StepRecord, checked_sequence, run_budget

PARTS = ("writing_weights", "transition_weights", "input_weights", "initial_potential")


@dataclass(frozen=True)
class HFConfig:
    """Settings of the Hessian-free trainer; the defaults are [MS11]'s where it states them."""

    initial_damping: float = 1.0  # lambda at the start
    structural: float = 1.0 / 30.0  # mu: the structural damping's weight relative to lambda ([MS11]: 1/30)
    curvature_fraction: float = 0.1  # the share of the sequence the curvature products run over
    max_cg: int = 250  # conjugate-gradient iterations per step at most
    decay: float = 0.95  # CG starts from this times the previous step
    progress: float = 5e-4  # Martens's stopping rule: stop once M improved by less than this share over k steps

    def __post_init__(self):
        if not (self.initial_damping > 0.0 and self.structural >= 0.0 and 0.0 < self.curvature_fraction <= 1.0
                and self.max_cg >= 1 and 0.0 <= self.decay <= 1.0 and self.progress > 0.0):
            raise ValueError("HFConfig: need initial_damping > 0, structural >= 0, curvature_fraction in (0, 1], "
                             "max_cg >= 1, decay in [0, 1] and progress > 0")


@kernel
def r_forward(net, x, w, a, dtau, drho, dw, rv, ra, rz):
    """The forward pass in direction (dw, dtau, drho) from the pass ``a`` at theta over ``x``: rv[t] = R{V^t},
    ra[t] = R{a^t} = s'(V^t) R{V^t} and rz[t] = R{z_t} (the logits z_t(y) = sum_i a_i^t w_iy) along it; rv[0]
    is given (the direction's dV^0, or 0 for a slice whose first state is held fixed)."""
    inputs, tau, rho, leak, gated, activation, _ = net
    T = x.shape[0]
    N1, D = inputs.shape
    A = w.shape[1]
    rv[0, 0] = 0.0
    for i in range(N1):
        ra[0, i] = slope(a[0, i], activation) * rv[0, i] if i > 0 else 0.0
    for t in range(T):
        for y in range(A):
            s = 0.0
            for i in range(N1):
                s += ra[t, i] * w[i, y] + a[t, i] * dw[i, y]
            rz[t, y] = s
        sym = x[t] if gated else 0
        rv[t + 1, 0] = 0.0
        ra[t + 1, 0] = 0.0
        for j in range(1, N1):
            acc = leak * rv[t, j]
            if not gated:
                acc += drho[x[t], j]
            for k in range(D):
                src = inputs[j, k]
                acc += dtau[sym, j, k] * a[t, src] + tau[sym, j, k] * ra[t, src]
            rv[t + 1, j] = acc
            ra[t + 1, j] = slope(a[t + 1, j], activation) * acc


@kernel
def gn_backward(net, x, chi, w, a, pi, rz, ra, structural, B, back, gw, gtau, grho):
    """J^T H_L J v + structural J_a^T J_a v, accumulated into (gw, gtau, grho) and B[0] (for V^0), from
    ``r_forward``'s rz and ra along v: the errors u_t = chi_t (diag(pi_t) - pi_t pi_t^T) R{z_t} go back through the
    softmax and the network as eq. 22's B does (each hidden activity also receiving ``structural`` R{a^t}, the
    Gauss-Newton matrix of half the squared change of the hidden states); ``back`` (N+1,) and B (T+1, N+1) are
    work, B[T] read as 0."""
    inputs, tau, rho, leak, gated, activation, _ = net
    T = x.shape[0]
    N1, D = inputs.shape
    A = w.shape[1]
    for i in range(N1):
        B[T, i] = 0.0
    for t in range(T - 1, -1, -1):
        sym = x[t] if gated else 0
        for i in range(N1):
            back[i] = 0.0
        for j in range(1, N1):  # transmitted through step t's transition, and the step's own gradients
            bj = B[t + 1, j]
            if bj != 0.0:
                if not gated:
                    grho[x[t], j] += bj
                for k in range(D):
                    src = inputs[j, k]
                    gtau[sym, j, k] += bj * a[t, src]
                    back[src] += tau[sym, j, k] * bj
        c = chi[t]
        mean = 0.0
        if c != 0.0:
            for y in range(A):
                mean += pi[t, y] * rz[t, y]
        for i in range(1, N1):
            e = back[i] + structural * ra[t, i]
            if c != 0.0:
                for y in range(A):
                    e += w[i, y] * c * pi[t, y] * (rz[t, y] - mean)
            B[t, i] = leak * B[t + 1, i] + slope(a[t, i], activation) * e
        B[t, 0] = 0.0
        if c != 0.0:
            for i in range(N1):
                ai = a[t, i]
                if ai != 0.0:
                    for y in range(A):
                        gw[i, y] += ai * c * pi[t, y] * (rz[t, y] - mean)


class HessianFreeTrainer:
    """[MS11]'s Hessian-free optimisation of ``params`` on ``symbols`` (the module docstring); the interface of
    ``batch.BatchTrainer`` (``run``, ``steps``, ``train_seconds``, ``log2_likelihood``, ``history``), its
    ``rate_w`` the damping lambda and ``rate_tau`` the structural damping's weight mu lambda."""

    def __init__(self, spec: ModelSpec, params: Params, symbols, predict_mask=None, config: HFConfig = HFConfig()):
        self.spec, self.config, self.params = spec, config, params.copy()
        self.symbols, chi = checked_sequence(symbols, predict_mask, spec.alphabet_size)
        T, N, A, D = len(self.symbols), spec.units, spec.alphabet_size, spec.slots
        if not chi.sum() > 0.0:
            raise ValueError(f"predict_mask must have shape ({T},) and score some symbol")
        self.chi, self.scored = chi, float(chi.sum())
        self.V, self.a, self.pi = allocate(T, N, A)
        self._trial = allocate(T, N, A)
        self.loglik = self._forward(self.params, (self.V, self.a, self.pi))
        if not np.isfinite(self.loglik):
            raise ValueError("the initial parameters give a non-finite log-likelihood")
        self._shapes = [(name, getattr(self.params, name).shape) for name in PARTS]
        self._sizes = [int(np.prod(shape)) for _, shape in self._shapes]
        self.damping = config.initial_damping
        self._previous = np.zeros(sum(self._sizes))
        self._slice = max(1, int(round(T * config.curvature_fraction)))
        # the curvature's normaliser: the scored symbols a slice holds on average, so that a slice with few (or,
        # distant XOR's short runs, none) still weighs the structural term as the others
        self._slice_scored = self.scored * self._slice / T
        self._start = 0
        L = self._slice
        self._rv, self._ra, self._B = (np.zeros((L + 1, N + 1)) for _ in range(3))
        self._rz = np.zeros((L, A))
        self._back = np.zeros(N + 1)
        # the gradient's work, over the whole sequence: the writing sums, B and the modulus of eq. 22, the
        # transition sums (the metric's, unused, with them)
        self._writing = tuple(np.zeros((N + 1, A)) for _ in range(3))
        self._backprop = Backprop(np.zeros((T + 1, N + 1)), np.zeros((T + 1, N + 1)))
        S, R = (A if spec.gated else 1), (0 if spec.gated else A)
        self._sums = TransitionSums(np.zeros((S, N + 1, D)), np.zeros((R, N + 1)), np.zeros((S, N + 1, D, D)),
                                    np.zeros((R, N + 1)))
        self.steps, self.history, self.train_seconds = 0, [], 0.0
        self.cg_iterations = 0

    # -- flat vectors over the trainable arrays -----------------------------------------------------------
    def _pack(self, arrays) -> np.ndarray:
        return np.concatenate([np.ravel(arrays[name]) for name, _ in self._shapes])

    def _unpack(self, flat: np.ndarray) -> dict:
        out, k = {}, 0
        for (name, shape), size in zip(self._shapes, self._sizes):
            out[name] = flat[k:k + size].reshape(shape)
            k += size
        return out

    def _shifted(self, step: np.ndarray) -> Params:
        trial = self.params.copy()
        for name, d in self._unpack(step).items():
            getattr(trial, name)[...] += d
        return trial

    # -- the loss, its gradient, the curvature products ---------------------------------------------------
    def _forward(self, params: Params, buffers) -> float:
        V, a, pi = buffers
        return forward(network(self.spec, params), self.symbols, self.chi, params.writing_weights,
                       params.initial_potential, V, a, pi)

    @property
    def log2_likelihood(self) -> float:
        return self.loglik / LN2

    @property
    def rate_w(self) -> float:
        return self.damping

    @property
    def rate_tau(self) -> float:
        return self.config.structural * self.damping

    def gradient(self) -> np.ndarray:
        """The gradient of f = -(eq. 16's log-likelihood) / (scored symbols) at the current parameters."""
        s, p, sums, back = self.spec, self.params, self._sums, self._backprop
        W, h0, hd = self._writing
        for arr in (W, h0, hd, *sums):
            arr.fill(0.0)
        accumulate_writing(self.symbols, self.chi, self.a, self.pi, W, h0, hd)
        back.B[-1].fill(0.0)  # eq. 22's B^T = 0 (the modulus stays 0: NO_MODULUS)
        net = network(s, p)
        backward(net, Scored(self.symbols, self.symbols, self.chi), p.writing_weights, self.a, self.pi, NO_MODULUS,
                 back, np.zeros((3, s.units + 1)))
        accumulate_transition(net, self.symbols, self.a, back, True, sums)
        v0 = back.B[0].copy()
        v0[0] = 0.0
        rho = sums.G_rho if not s.gated else np.zeros_like(p.input_weights)  # a gated model reads no rho
        grad = {"writing_weights": W, "transition_weights": sums.G, "input_weights": rho, "initial_potential": v0}
        return -self._pack(grad) / self.scored

    def curvature(self, v: np.ndarray, damping: float | None = None) -> np.ndarray:
        """(G + lambda mu S) v / n + lambda v over the current slice, n the scored symbols of a slice on average;
        ``damping`` lambda (the trainer's if None; 0: the Gauss-Newton product alone)."""
        lam = self.damping if damping is None else damping
        p, d = self.params, self._unpack(v)
        s0 = self._start
        s1 = min(s0 + self._slice, len(self.symbols))
        x, chi = self.symbols[s0:s1], self.chi[s0:s1]
        L = s1 - s0
        rv, ra, rz, B = self._rv[:L + 1], self._ra[:L + 1], self._rz[:L], self._B[:L + 1]
        rv[0] = d["initial_potential"] if s0 == 0 else 0.0
        net = network(self.spec, p)
        r_forward(net, x, p.writing_weights, self.a[s0:s1 + 1], d["transition_weights"], d["input_weights"],
                  d["writing_weights"], rv, ra, rz)
        out = {name: np.zeros(shape) for name, shape in self._shapes}
        gn_backward(net, x, chi, p.writing_weights, self.a[s0:s1 + 1], self.pi[s0:s1], rz, ra,
                    self.config.structural * lam, B, self._back, out["writing_weights"], out["transition_weights"],
                    out["input_weights"])
        if s0 == 0:
            out["initial_potential"][...] = B[0]
            out["initial_potential"][0] = 0.0
        return self._pack(out) / self._slice_scored + lam * v

    # -- one step ----------------------------------------------------------------------------------------
    def _conjugate_gradients(self, g: np.ndarray) -> tuple[list[np.ndarray], list[float]]:
        """Approximate minimisers of q(d) = g.d + d.(A d)/2, A the damped curvature, from 0.95 times the last
        step: the iterates kept at Martens's geometric schedule (and the last), and q along the way."""
        cfg = self.config
        x = cfg.decay * self._previous
        r = -g - self.curvature(x)
        p = r.copy()
        rr = float(r @ r)
        kept, values, keep_at = [], [], 1.0
        for i in range(1, cfg.max_cg + 1):
            if rr == 0.0:
                break
            Ap = self.curvature(p)
            pAp = float(p @ Ap)
            if pAp <= 0.0:
                break
            alpha = rr / pAp
            x = x + alpha * p
            r = r - alpha * Ap
            rr_new = float(r @ r)
            p = r + (rr_new / rr) * p
            rr = rr_new
            values.append(0.5 * float(g @ x) - 0.5 * float(x @ r))
            self.cg_iterations += 1
            if i >= keep_at:  # x is a new array at every iteration: kept by reference
                kept.append(x)
                keep_at = max(keep_at * 1.3, i + 1)
            k = max(10, i // 10)
            if i > k and values[-1] < 0.0 and (values[-1] - values[-1 - k]) / values[-1] < k * cfg.progress:
                break
        if not kept or kept[-1] is not x:
            kept.append(x)
        return kept, values

    def step(self) -> StepRecord:
        t0 = time.process_time()
        g = self.gradient()
        f0 = -self.loglik / self.scored
        kept, values = self._conjugate_gradients(g)
        # CG backtracking: the latest kept iterate, then earlier ones while they do better on f itself
        best, best_f = None, np.inf
        for d in reversed(kept):
            f = -self._forward(self._shifted(d), self._trial) / self.scored
            f = f if np.isfinite(f) else np.inf  # (an iterate too far: the earlier ones may do)
            if best is not None and f >= best_f:
                break
            if f < best_f:
                best, best_f = d, f
        accepted = False
        if best is not None:
            model = float(g @ best) + 0.5 * float(best @ self.curvature(best, 0.0))  # eq. 2.13's M, undamped
            ratio = (best_f - f0) / model if model < 0.0 else -np.inf
            if ratio < 0.25:  # Levenberg-Marquardt (seed 001, eqs. 2.19-2.20)
                self.damping *= 1.5
            elif ratio > 0.75:
                self.damping *= 2.0 / 3.0
            step, f = best, best_f
            for _ in range(20):  # a step that does not lower f is shortened, then refused
                if np.isfinite(f) and f < f0:
                    accepted = True
                    break
                step = 0.8 * step
                f = -self._forward(self._shifted(step), self._trial) / self.scored
            if accepted:
                self.params = self._shifted(step)
                self.loglik = self._forward(self.params, (self.V, self.a, self.pi))
                self._previous = best
        if not accepted:
            if best is None:  # no iterate gave a finite loss (else the rule above has raised lambda already)
                self.damping *= 1.5
            self._previous = np.zeros_like(self._previous)
        self._start = (self._start + self._slice) % len(self.symbols)
        self.train_seconds += time.process_time() - t0
        self.steps += 1
        record = StepRecord(self.steps, "hf", self.log2_likelihood, self.damping, len(values), accepted,
                            self.train_seconds)
        self.history.append(record)
        return record

    def run(self, steps: int | None = None, seconds: float | None = None, callback=None):
        """Steps until ``steps`` of them or ``seconds`` of CPU time (``batch.run_budget``)."""
        return run_budget(self, self.step, steps, seconds, callback)
