"""The rehearsing GLNN's per-symbol kernels: each network's evolution on the stream, the group's mixture that
predicts, and the buffer that keeps the blocks.  Equations in the package docstring (``__init__.py``)."""

from __future__ import annotations

from ..jit import kernel
from ..kernels.activation import activate
from ..kernels.elementary import exp_of, log2, log_of
from ..kernels.forward import evolve_into, softmax_into
from ..kernels.network import Network
from .config import COMPLETE, DRAWN, FILLED, HEAD, PREVIOUS, REHEARSALS, SINCE, SYMBOLS

# what learn_span stopped for
DONE, BLOCK_DRAWN, REHEARSE = 0, 1, 2
LN2 = 0.6931471805599453  # ln 2, the double nearest


@kernel
def start(state, activation, numerics):
    """Every network's potentials at its V^0, its activities s(V^0) (a_0 = 1)."""
    v, a = state.v, state.a
    for n in range(v.shape[0]):
        v[n, 0] = 0.0
        a[n, 0] = 1.0
        for j in range(1, v.shape[1]):
            v[n, j] = state.v0[n, j]
            a[n, j] = activate(v[n, j], activation, numerics)


@kernel
def _network(state, n, activation, numerics):
    return Network(state.inputs[n], state.tau[n], state.rho[n], 1.0, True, activation, numerics)


@kernel
def _top(row):
    top = row[0]
    for k in range(1, row.shape[0]):
        if row[k] > top:
            top = row[k]
    return top


@kernel
def _softmaxes(state, group, draws, numerics):
    """Each draw of the group's prediction (eq. 6) into ``state.pi``."""
    for k in range(draws):
        softmax_into(state.a[group * draws + k], state.w[group * draws + k], state.pi[k], numerics)


@kernel
def _mixed(state, draws, y, outside_y, share):
    """The group's members' mixture at symbol y, unnormalised: each draw's pi(y) regularised, (1 - share) pi(y)
    + share / A, then the online learner's ``outside_y`` if it is a member, each weighted by its weight (the
    first row of ``state.work``, from :func:`_weights`)."""
    beta = state.work[0]
    A = state.pi.shape[1]
    acc = 0.0
    for k in range(draws):
        acc += beta[k] * ((1.0 - share) * state.pi[k, y] + share / A)
    if state.mixture.shape[1] > draws:
        acc += beta[draws] * outside_y
    return acc


@kernel
def _weights(state, group, numerics):
    """exp(log-weight - the largest) of each of the group's members into ``state.work[0]``; returns their sum."""
    row = state.mixture[group]
    top = _top(row)
    total = 0.0
    for k in range(row.shape[0]):
        state.work[0, k] = exp_of(numerics, row[k] - top)
        total += state.work[0, k]
    return total


@kernel
def mixture_into(state, group, draws, share, outside, out, numerics):
    """out = the prediction of the next symbol: the group's members each weighted by 2^-(its code length on the
    positions the group predicted), a Bayesian mixture.  The members are the group's draws, each its softmax (eq.
    6) regularised as seed 000 §4 does, (1 - share) of it and share of the uniform (a fixed share, since a stream
    has no end), and the online learner's prediction ``outside`` if it is a member.  Each draw's own softmax is
    left in ``state.pi``."""
    _softmaxes(state, group, draws, numerics)
    total = _weights(state, group, numerics)
    for y in range(out.shape[0]):
        out[y] = _mixed(state, draws, y, outside[y] if outside.shape[0] > 0 else 0.0, share) / total


@kernel
def learn_span(state, x, bits, outside_bits, hyper, numerics):
    """Predict, score and learn ``x`` from its start, until it ends or the learner must step out of the kernel:
    the first block complete (the networks are to be drawn from it) or a rehearsal due.  Returns (the symbols
    learned, why it stopped: DONE, BLOCK_DRAWN or REHEARSE).  ``bits`` gets each symbol's code length;
    ``outside_bits`` holds the online learner's code length of each symbol of ``x`` (empty: not a member)."""
    draws, groups, interval, share, activation = hyper
    c, buf, mix = state.counts, state.buffer, state.mixture
    block = buf.shape[1]
    slots = buf.shape[0]
    G = state.v.shape[0]
    A = state.w.shape[2]
    members = mix.shape[1]
    nxt = state.work[1:]
    for t in range(x.shape[0]):
        s = x[t]
        group = c[PREVIOUS] % groups
        # the prediction of s (mixture_into's, at s alone), and each member's share of the mixture's evidence
        _softmaxes(state, group, draws, numerics)
        total = _weights(state, group, numerics)
        outside = exp_of(numerics, -outside_bits[t] * LN2) if members > draws else 0.0
        bits[t] = -log2(_mixed(state, draws, s, outside, share) / total)
        # each member's log-weight: its own code length on the positions its group predicts (a Bayesian mixture)
        for k in range(draws):
            mix[group, k] += log_of(numerics, (1.0 - share) * state.pi[k, s] + share / A)
        if members > draws:
            mix[group, draws] += log_of(numerics, outside)
        top = _top(mix[group])
        for k in range(members):
            mix[group, k] -= top
        # every network reads the symbol (eq. 13)
        for n in range(G):
            evolve_into(_network(state, n, activation, numerics), state.v[n], state.a[n], s, nxt[0], nxt[1])
            for j in range(state.v.shape[1]):
                state.v[n, j] = nxt[0, j]
                state.a[n, j] = nxt[1, j]
        c[PREVIOUS] = s
        c[SYMBOLS] += 1
        # the buffer
        buf[c[HEAD], c[FILLED]] = s
        c[FILLED] += 1
        if c[COMPLETE] > 0:
            c[SINCE] += 1
        if c[FILLED] == block:
            c[FILLED] = 0
            c[HEAD] = (c[HEAD] + 1) % slots
            state.before[c[HEAD]] = s
            if c[COMPLETE] < slots - 1:
                c[COMPLETE] += 1
            if c[DRAWN] == 0:
                return t + 1, BLOCK_DRAWN
        if c[COMPLETE] > 0 and c[SINCE] >= interval:
            return t + 1, REHEARSE
    return x.shape[0], DONE


@kernel
def rehearsal_block(counts, slots):
    """The buffer's row the next rehearsal steps on: complete block REHEARSALS mod COMPLETE, oldest first."""
    oldest = (counts[HEAD] - counts[COMPLETE]) % slots
    return (oldest + counts[REHEARSALS] % counts[COMPLETE]) % slots
