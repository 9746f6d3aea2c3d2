"""The softmax readout the baselines share (the echo-state network, the LSTM and GRU, the scoRNN): its
prediction over an open alphabet's active codes, the code length of a symbol under it, a new symbol's column,
and its gradient step after each symbol with the error it sends back into a truncated back-propagation window.

The readout is a matrix w of (1 + units) rows, one column per internal code: pi = softmax over the active
codes of w^T a, a = (1, the units' outputs).  Code 0 is the escape (a symbol not seen yet); once every symbol
of the alphabet has been seen it is left out of the softmax.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .kernels.elementary import log, log2, numerics_marker
from .kernels.forward import softmax_into
from .open_alphabet import OpenAlphabetLearner, validate_symbols

ACTIVE = 1  # counts[ACTIVE]: the active codes, in the state of every learner below (their config.ACTIVE)


@kernel
def predict(a, w, pi, active, cap, numerics):
    """pi = the softmax over the ``active`` + 1 codes of w^T a, the escape left out (pi[0] = 0) once every
    symbol of the ``cap`` has been seen; returns the width, ``active`` + 1."""
    width = active + 1
    first = 1 if active == cap else 0
    softmax_into(a, w[:, first:width], pi[first:width], numerics)
    if first == 1:
        pi[0] = 0.0
    return width


@kernel
def code_length(pi, code, cap, active):
    """The bits of a symbol of internal ``code`` under the prediction ``pi`` over the codes, ``active`` of them
    in use: a first occurrence (code 0) is the escape, then its name among the cap - active unseen."""
    if code == 0:
        return -log2(pi[0]) + log2(float(cap - active))
    return -log2(pi[code])


@kernel
def join_readout(code_of, symbol_of, counts, active, w, cap, symbol):
    """``symbol`` gets the next code (``counts[active]`` + 1, in order of first appearance), and its column of
    the readout takes the escape's share of the mass: its bias the escape's less log(symbols still unseen), its
    other weights 0.  Returns the code.  The learner then draws the symbol's input weights."""
    n = counts[active]
    code = n + 1
    code_of[symbol] = code
    symbol_of[code] = symbol
    counts[active] = code
    for i in range(w.shape[0]):
        w[i, code] = 0.0
    w[0, code] = w[0, 0] - log(float(cap - n))
    return code


@kernel
def readout_step(w, a, pi, err, dh, s, code, first, width, rate):
    """The readout's gradient step on the symbol just scored (``code``; log-likelihood in nats, at ``rate``),
    and the error it sends into the outputs of the window's step s: dh[s] = w^T (e_code - pi) over the units,
    taken with w before its step (s < 0: none, the stream's first symbol).  ``err`` is work."""
    for y in range(first, width):
        err[y] = (1.0 if y == code else 0.0) - pi[y]
    for i in range(w.shape[0]):
        row = w[i]
        acc = 0.0
        step = rate * a[i]
        for y in range(first, width):
            acc += row[y] * err[y]
            row[y] += step * err[y]
        if i > 0 and s >= 0:
            dh[s, i - 1] = acc


@kernel
def first_in_window(codes, s):
    """Whether step s is the first of a window to read its code (each code's gradient row counted once)."""
    for r in range(s):
        if codes[r] == codes[s]:
            return False
    return True


class ReadoutLearner(OpenAlphabetLearner):
    """An open-alphabet learner that predicts with this readout, the matrix ``readout_field`` of its state, and
    seqd's own exp (the same bits on every machine): the echo-state network, the LSTM and GRU, the scoRNN.  A
    subclass defines ``_learn_buffer(x, bits)``, its kernel's per-symbol loop over the checked symbols ``x``."""

    readout_field = "v"

    def __init__(self, config=None, *, _state=None):
        super().__init__(config, _state=_state)
        self._numerics = numerics_marker("ieee")

    def _learn_buffer(self, x: np.ndarray, bits: np.ndarray) -> None:
        raise NotImplementedError

    def learn(self, symbols) -> np.ndarray:
        """Predict, score and learn each symbol in turn; returns each one's prequential code length in bits."""
        x = validate_symbols(symbols, self.config.alphabet_cap)
        bits = np.empty(len(x))
        self._learn_buffer(x, bits)
        return bits

    def _distribution(self) -> tuple[int, np.ndarray]:
        st = self.state
        width = predict(st.a, getattr(st, self.readout_field), st.pi, st.counts[ACTIVE], self.config.alphabet_cap,
                        self._numerics)
        return width, st.pi[:width]
