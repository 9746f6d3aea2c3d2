"""The bitwise model's recurrent units: a GLNN whose writing layer is the byte's binary tree.

Seed 000's GLNN (Definition 5, eq. 13) reads the stream byte by byte,

    V_j^{t+1} = V_j^t + sum_k tau[x_t, j, k] a_k^t,    a_j = tanh(V_j),

over a sparse random graph (each unit reads unit 0, itself and degree - 1
others).  Its writing layer (eq. 6) is a softmax over the 256 bytes; here
it is the same vote factored along the byte's binary tree: node c0 of the
tree (the partial byte, 1..255) gets the logit

    u^t(c0) = sum_i a_i^t v[c0, i],

the units' own probability that the next bit is 1 is sigma(u), and byte x
has p(x) = prod over its path of sigma(+-u).  The logit is one input of the
bit's mixers (``mixing.py``), which learn how far to trust it.

Training is the online algorithm of the 256-way learner (``online/``),
with the tree in place of the softmax:

* **writing weights**: after each bit, a discounted quasi-diagonal Newton
  step on its node's column (eqs. 17-21 online, ``learn_node``): gradient
  (y - sigma) a, curvature sigma (1 - sigma), each sum discounted by
  ``unit_writing_discount`` with a prior mass ``unit_writing_prior`` kept
  in the diagonal, step scaled by 1/N (all units vote at once);
* **transition weights**: every ``unit_window`` bytes, truncated
  back-propagation (eq. 22) over the window, whose outputs' loss at time t
  is the tree's, -log p(x_t): the error term of unit i is

      sum_{c0 on x_t's path} (y_c0 - sigma(u^t(c0))) v[c0, i],

  and the RBPM modulus (eq. 24) takes the tree's curvature along the path,
  sum sigma (1 - sigma) v[c0, i]^2, whose expectation over the path is the
  metric of the tree's distribution.  Each transition contributes to its
  (byte, unit) block the gradient a_in B_j^{t+1} (eq. 25) and the metric
  term m_j^{t+1} a_in a_in^T (eq. 26); the blocks' inverses are kept by
  Sherman-Morrison (``online/metric_blocks.py``, seed 004 §1.3), and the
  step P G is tried as seed 000 §2 says: the window is replayed with the
  trial weights, kept (rate x 1.1) if its log-likelihood did not go down,
  else undone (rate / 2).

The 256 bytes are known from the start: every (byte, unit) block starts
from eqs. (31)-(33) (``initialization.py``).  Everything is deterministic:
seqd's own tanh, exp and log.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..initialization import initial_potentials, unit_transition, unit_uniform
from ..jit import inline_kernel, kernel
from ..kernels.elementary import exp, log, tanh
from ..model import random_graph
from ..kernels.metric_blocks import block_step, contribute
from .config import (AT, ETA_TAU, NONFINITE, REJECTED, UNIT_INPUT_SCALE, UNIT_METRIC_DISCOUNT, UNIT_METRIC_PRIOR,
                     UNIT_WRITING_DISCOUNT, UNIT_WRITING_PRIOR, WINDOW_GAIN, WINDOWS, BitsConfig)
from .tables import loss_fast, squash_fast

RATE_GROWTH, RATE_SHRINK, MAX_RATE = 1.1, 0.5, 1.0


class Units(NamedTuple):
    """The units' arrays (``state.BitsState``'s ``unit_*`` fields); N units, D = degree + 1 slots, window K."""

    inputs: np.ndarray  # (N+1, D) int64: incoming units of each unit (slot 0: unit 0, slot 1: itself)
    tau: np.ndarray  # (256, N+1, D): transition weights, byte-major
    V: np.ndarray  # (K+1, N+1): the window's potentials, row k at window time k
    a: np.ndarray  # (K+1, N+1): their activities (a_0 = 1)
    x: np.ndarray  # (K+1,) int64: the byte read at each window time
    v: np.ndarray  # (256, N+1): writing weights, row c0 for the tree's node c0 (row 0 unused)
    h0: np.ndarray  # (256, N+1): the quasi-diagonal Hessian terms h_0i of each node (column 0: h_00)
    hd: np.ndarray  # (256, N+1): h_ii (column 0 unused)
    G: np.ndarray  # (256, N+1, D): the window's gradient per block
    metric: np.ndarray  # (256, N+1, D, D): each block's inverse discounted metric
    updates: np.ndarray  # (256, N+1) int64: contributions each block has had
    work: np.ndarray  # (4, K+3, max(N+1, 2D)): B, m, the trial's V and a (``_window``)
    saved: np.ndarray  # (K, N+1, D): the trial's undo (one row per window time: a block read there)
    reals: np.ndarray  # ETA_TAU, WINDOW_GAIN
    ints: np.ndarray  # AT (window time of the next byte), WINDOWS, REJECTED, NONFINITE


@inline_kernel
def units_of(st):
    """The units' view of a bitwise state."""
    return Units(st.unit_inputs, st.unit_tau, st.unit_V, st.unit_a, st.unit_x, st.unit_v, st.unit_h0, st.unit_hd,
                 st.unit_G, st.unit_metric, st.unit_updates, st.unit_work, st.unit_saved, st.unit_reals,
                 st.unit_ints)


def init_units(state, config: BitsConfig) -> None:
    """Seed 000's initial units (§2 and Appendix A, eqs. 31-33), in a fresh state's unit arrays."""
    N = config.units
    if not N:
        return
    state.unit_inputs[...] = random_graph(N, config.unit_degree, np.random.default_rng([config.seed, 0x5EED]))
    for y in range(256):
        for j in range(1, N + 1):
            self_loop, bias = unit_transition(1.0, j, unit_uniform(config.seed, j, y) - 0.5,
                                              config.unit_input_scale)
            state.unit_tau[y, j, 0] = bias
            state.unit_tau[y, j, 1] = self_loop
    D = config.unit_degree + 1
    state.unit_metric[...] = np.eye(D) / config.unit_metric_prior  # the inverse of the prior mass: full blocks
    state.unit_h0[:, 0] = config.unit_writing_prior
    state.unit_hd[...] = config.unit_writing_prior
    state.unit_V[0, 1:] = initial_potentials(1.0, N)
    state.unit_a[0, 0] = 1.0
    state.unit_a[0, 1:] = [tanh(float(v)) for v in state.unit_V[0, 1:]]
    state.unit_reals[ETA_TAU] = 1.0 / N


@inline_kernel
def _logit(a, v):
    """sum_i a_i v_i: a node's logit from the activities ``a`` and its writing weights ``v``."""
    u = 0.0
    for i in range(v.shape[0]):
        u += a[i] * v[i]
    return u


@inline_kernel
def node_logit(un, c0):
    """u(c0) = sum_i a_i v[c0, i], the units' logit that the bit at node c0 is 1."""
    return _logit(un.a[un.ints[AT]], un.v[c0])


@inline_kernel
def learn_node(un, hyper, c0, y, u):
    """The writing step on node c0's weights after its bit came out ``y``, u its logit: one discounted
    quasi-diagonal Newton step (eqs. 17-21 online, as ``online/writing.writing_update`` takes per symbol):
    gradient (y - sigma(u)) a_i, curvature c = sigma(u)(1 - sigma(u)), the sums h_00, h_0i, h_ii discounted
    by gamma with the prior gamma lambda renewed on the diagonal, and the step of eqs. 20-21 scaled by 1/N."""
    a = un.a[un.ints[AT]]
    v, h0, hd = un.v[c0], un.h0[c0], un.hd[c0]
    N1 = v.shape[0]
    p = squash_fast(u)
    c = p * (1.0 - p)
    e = y - p
    g = hyper[UNIT_WRITING_DISCOUNT]
    keep = 1.0 - g
    prior = g * hyper[UNIT_WRITING_PRIOR]
    eta = 1.0 / (N1 - 1)
    h00 = keep * h0[0] + prior + c
    h0[0] = h00
    inverse = 1.0 / h00
    g0 = e - prior * v[0]
    bias = g0 * inverse
    for i in range(1, N1):
        ai = a[i]
        h0i = keep * h0[i] + c * ai
        hii = keep * hd[i] + prior + c * ai * ai
        h0[i] = h0i
        hd[i] = hii
        ratio = h0i * inverse
        step = (e * ai - prior * v[i] - g0 * ratio) / (hii - h0i * ratio)
        v[i] += eta * step
        bias -= ratio * step
    v[0] += eta * bias


@inline_kernel
def _evolve(un, V, a, x, Vn, an):
    """One GLNN transition (eq. 13): V^{t+1} = V^t + sum_k tau[x, j, k] a_k^t, a = tanh(V)."""
    N1, D = un.inputs.shape
    an[0] = 1.0
    Vn[0] = 0.0
    for j in range(1, N1):
        acc = V[j]
        for k in range(D):
            acc += un.tau[x, j, k] * a[un.inputs[j, k]]
        Vn[j] = acc
        an[j] = tanh(acc)


@inline_kernel
def _tree_loglik(un, a, x):
    """log p(x) in nats under the units alone: the sum over x's path of log sigma(+-u)."""
    total = 0.0
    c0 = 1
    for bit in range(7, -1, -1):
        u = _logit(a, un.v[c0])
        y = (x >> bit) & 1
        total -= loss_fast(u if y == 1 else -u)
        c0 = 2 * c0 + y
    return total


@inline_kernel
def advance(st, hyper, symbol):
    """The units after byte ``symbol``: the transition that reads it, and, once the window holds K bytes and
    the one after them, the window's step on tau (``_window``)."""
    un = units_of(st)
    if un.v.shape[0] == 0:  # no units
        return
    k = un.ints[AT]
    K = un.x.shape[0] - 1
    un.x[k] = symbol
    if k == K:  # byte K is the window's last output: learn, then it starts the next window
        _window(un, hyper)
        for i in range(un.V.shape[1]):
            un.V[0, i] = un.V[K, i]
            un.a[0, i] = un.a[K, i]
        un.x[0] = symbol
        k = 0
    _evolve(un, un.V[k], un.a[k], symbol, un.V[k + 1], un.a[k + 1])
    un.ints[AT] = k + 1


@inline_kernel
def _backward(un, a, B, m):
    """Truncated BPTT over the window's outputs 1..K (eq. 22) with the tree's error terms, and the RBPM
    modulus (eq. 24) with its curvature along the path, B^{K+1} = m^{K+1} = 0; returns the window's
    log-likelihood, sum_t log p(x_t) over outputs 1..K (nats), met on the way."""
    N1, D = un.inputs.shape
    K = un.x.shape[0] - 1
    for i in range(N1):
        B[K + 1, i] = 0.0
        m[K + 1, i] = 0.0
    loglik = 0.0
    for t in range(K, 0, -1):
        x = un.x[t]
        for i in range(N1):
            B[t, i] = 0.0
            m[t, i] = 0.0
        # transmitted terms through transition t (which reads x_t): dV_j^{t+1}/dV_i^t = 1_{i=j} + tau s'(V_i)
        for j in range(1, N1):
            bj = B[t + 1, j]
            mj = m[t + 1, j]
            for q in range(1, D):
                i = un.inputs[j, q]
                coef = un.tau[x, j, q]
                jac = coef * (1.0 - a[t, i] * a[t, i])
                if i == j:
                    jac += 1.0
                B[t, i] += coef * bj  # scaled by s'(V_i) below
                m[t, i] += jac * jac * mj
        # the output's terms along x_t's path
        c0 = 1
        for bit in range(7, -1, -1):
            vc = un.v[c0]
            u = _logit(a[t], vc)
            p = squash_fast(u)
            y = (x >> bit) & 1
            loglik -= loss_fast(u if y == 1 else -u)
            e = y - p
            c = p * (1.0 - p)
            for i in range(1, N1):
                vi = vc[i]
                B[t, i] += e * vi
                m[t, i] += c * vi * vi * (1.0 - a[t, i] * a[t, i]) ** 2
            c0 = 2 * c0 + y
        for i in range(1, N1):
            s1 = 1.0 - a[t, i] * a[t, i]
            B[t, i] = B[t + 1, i] + s1 * B[t, i]
        B[t, 0] = 0.0
        m[t, 0] = 0.0
    return loglik


@inline_kernel
def _first_read(x, k):
    """Whether window time k is the first to read its byte (its blocks step once, saved at that time)."""
    for q in range(k):
        if x[q] == x[k]:
            return False
    return True


@kernel
def _window(un, hyper):
    """The window's step on tau: gradient and metric of transitions 0..K-1 (eqs. 25-26), the step P G on
    every block read, tried by replaying the window (seed 000 §2's rule)."""
    N1, D = un.inputs.shape
    K = un.x.shape[0] - 1
    B, m, tV, ta = un.work[0, :, :N1], un.work[1, :, :N1], un.work[2, :, :N1], un.work[3, :, :N1]
    before = _backward(un, un.a, B, m)
    un.ints[WINDOWS] += 1
    for t in range(1, K + 1):
        for j in range(N1):
            if not (math.isfinite(B[t, j]) and math.isfinite(m[t, j])):
                un.ints[NONFINITE] += 1
                un.ints[REJECTED] += 1
                un.reals[ETA_TAU] *= RATE_SHRINK
                return
    discounting = (hyper[UNIT_METRIC_DISCOUNT], hyper[UNIT_METRIC_PRIOR])
    u = un.work[2, 0, :D]  # work rows the replay below overwrites
    scratch = un.work[3, 0, :2 * D]
    for k in range(K):
        y = un.x[k]
        for j in range(1, N1):
            for q in range(D):
                u[q] = un.a[k, un.inputs[j, q]]
            un.updates[y, j] = contribute(un.G[y, j], un.metric[y, j], u, (B[k + 1, j], m[k + 1, j]), discounting,
                                          un.updates[y, j], False, scratch)
    # the step: P G on each block read (once per byte, however often it was read), kept for undoing
    eta = un.reals[ETA_TAU]
    finite = True
    for k in range(K):
        y = un.x[k]
        if not _first_read(un.x, k):
            continue
        for j in range(1, N1):
            step = u  # D values
            block_step(un.metric[y, j], un.G[y, j], False, step)
            for r in range(D):
                un.G[y, j, r] = 0.0
                un.saved[k, j, r] = un.tau[y, j, r]
                if math.isfinite(step[r]):
                    un.tau[y, j, r] += eta * step[r]
                else:
                    finite = False
    # replay with the trial weights
    for i in range(N1):
        tV[0, i] = un.V[0, i]
        ta[0, i] = un.a[0, i]
    for k in range(K):
        _evolve(un, tV[k], ta[k], un.x[k], tV[k + 1], ta[k + 1])
    after = 0.0
    for t in range(1, K + 1):
        after += _tree_loglik(un, ta[t], un.x[t])
    if finite and math.isfinite(after) and after >= before:
        un.reals[ETA_TAU] = min(eta * RATE_GROWTH, MAX_RATE)
        un.reals[WINDOW_GAIN] = after - before
        for i in range(N1):
            un.V[K, i] = tV[K, i]
            un.a[K, i] = ta[K, i]
        return
    if not (finite and math.isfinite(after)):
        un.ints[NONFINITE] += 1
    un.ints[REJECTED] += 1
    un.reals[ETA_TAU] = eta * RATE_SHRINK
    for k in range(K - 1, -1, -1):  # undo exactly (a block read twice was saved once, where it was first read)
        y = un.x[k]
        if not _first_read(un.x, k):
            continue
        for j in range(1, N1):
            for r in range(D):
                un.tau[y, j, r] = un.saved[k, j, r]
