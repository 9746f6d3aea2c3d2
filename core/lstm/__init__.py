"""An LSTM (seed 001, Section 2.1.1) or a GRU (Section 2.1.2) as an online learner with seqd's interface: the
recurrent baselines.  ``LSTMConfig(cell="gru")`` takes gated recurrent units (``gru.py`` has their equations)
in place of memory cells; everything below but the cell's equations holds for both.

Each of ``layers`` stacked layers has N memory cells.  At each step a layer
reads the symbol (a code of the open alphabet, through a learned column of
input weights per gate), its own outputs h_{t-1} and, above the first layer,
the new outputs of the layer below; per cell j, with z_t that input and
sigma the logistic function,

    f_t = sigma(W_f z_t)     (forget gate)      i_t = sigma(W_i z_t)   (input gate, u of eq. 2.1)
    g_t = tanh(W_g z_t)      (candidate, eq. 2.3, g = tanh)
    o_t = sigma(W_o z_t)     (output gate, eq. 2.2)
    c_t = f_t c_{t-1} + i_t g_t                  (the memory cell, eq. 2.4)
    h_t = o_t tanh(c_t)                          (its output, eq. 2.5, h = tanh)

Eq. (2.4) is the 1997 cell, whose self-loop has weight 1; the forget gate
(Gers, Schmidhuber and Cummins, 2000) is what every LSTM since carries, and
what the LSTM rows of seed 000's Table 1 and lstm-compress use.  Each W
includes a bias; the forget gates' biases start at ``forget_bias`` (1),
every other weight uniform in [-init_scale, init_scale).

The prediction is a softmax over the active codes of v^T (1, h^1_t, ...,
h^L_t): every layer feeds it.  The alphabet is open as the GLNN's is (code 0
is the escape, a new symbol's column takes the escape's share; once every
symbol of the cap has been seen the escape is left out).

Learning is plain gradient ascent on the log-likelihood in nats, online:
the softmax layer steps after every symbol (rate ``learning_rate``); the
cells' weights by truncated back-propagation through time, once per window
of ``horizon`` symbols, over the window's summed log-likelihood with each
step's error through the softmax as it was when that step was scored, the
window's first state held fixed (seed 001, Section 1.3.2's gradient through time, truncated).
With ``clip`` > 0 a window's gradient longer than ``clip`` is rescaled to
it (seed 001, Algorithm 2).  lstm-compress (the LSTM of cmix, Byron Knoll)
trains its LSTM the same way, with 3 layers of 90 cells, horizon 10 and
rate 0.05 (``../shared/ANCHORS.md``); the defaults here are its settings
except the layers (1: a third of the time; ``docs/benchmarks.md`` compares).

Weights are drawn from (seed, row, column) by a hash (``online/alphabet.py``'s
``unit_uniform``) and every exp and tanh is seqd's own (``kernels/elementary.py``):
a seed gives the same code lengths on every machine.
"""

from .config import LSTMConfig
from .learner import LSTMLearner

__all__ = ["LSTMConfig", "LSTMLearner"]
