"""Run the Numba kernels on a :class:`naive.Case`, for the tests that compare them with references."""

from __future__ import annotations

import numpy as np

from naive import Case
from seqd.core.kernels.backward import Backprop, Scored, backward
from seqd.core.kernels.elementary import IEEE, numerics_marker
from seqd.core.kernels.forward import allocate, forward
from seqd.core.kernels.network import Network
from seqd.core.kernels.transition import TransitionSums, accumulate_transition
from seqd.core.kernels.writing import accumulate_writing


def view(kind, st):
    """The named tuple ``kind`` (``sources.Sources``, ``mixer.Mixer``, ...) of the state ``st``'s arrays, as the
    kernels' own ``sources_of``, ``mixer_of``, ... make it."""
    return kind(*(getattr(st, name) for name in kind._fields))


def k_network(c: Case, tau=None, rho=None) -> Network:
    return Network(c.inputs, c.tau if tau is None else tau, c.rho if rho is None else rho, c.leak, c.gated, c.act_code,
                   numerics_marker(IEEE))


def k_forward(c: Case):
    V, a, pi = allocate(c.T, c.N, c.A)
    ll = forward(k_network(c), c.x, c.chi, c.w, c.v0, V, a, pi)
    return V, a, pi, ll


def k_backward(c: Case, a, pi, modulus, B_T=None, m_T=None):
    B = np.zeros((c.T + 1, c.N + 1))
    m = np.zeros((c.T + 1, c.N + 1))
    if B_T is not None:
        B[c.T] = B_T
    if m_T is not None:
        m[c.T] = m_T
    scratch = np.zeros((3, c.N + 1))
    backward(k_network(c), Scored(c.x, c.x, c.chi), c.w, a, pi, modulus, Backprop(B, m), scratch)
    return B, m


def k_transition(c: Case, a, B, m, quasi_diagonal, out=None):
    if out is None:
        out = (np.zeros((c.S, c.N + 1, c.D)), np.zeros((c.A, c.N + 1)),
               np.zeros((c.S, c.N + 1, c.D, c.D)), np.zeros((c.A, c.N + 1)))
    accumulate_transition(k_network(c), c.x, a, Backprop(B, m), quasi_diagonal, TransitionSums(*out))
    return tuple(out)


def k_writing(c: Case, a, pi):
    W, h0, hd = (np.zeros((c.N + 1, c.A)) for _ in range(3))
    accumulate_writing(c.x, c.chi, a, pi, W, h0, hd)
    return W, h0, hd


def pipeline(c: Case, modulus, quasi_diagonal):
    V, a, pi, _ = k_forward(c)
    B, m = k_backward(c, a, pi, modulus)
    return (V, a, pi, B, m) + k_transition(c, a, B, m, quasi_diagonal)
