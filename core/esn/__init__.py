"""A leaky echo-state network (seed 001, Section 2.2.3) as an online learner with seqd's interface.

The reservoir is drawn once and never trained: N leaky-integrator units
(eq. 2.22, with h_{t-1} inside the nonlinearity, where the seed's printing
has h_t),

    h_t = (1 - alpha) tanh(W h_{t-1} + W^in x_t) + alpha h_{t-1},

x_t the one-hot code of the symbol read, W sparse (each unit reads
``connections`` distinct units, weights uniform in [-1, 1)) and scaled to
the spectral radius ``spectral_radius`` (Jaeger's echo-state recipe; close
to 1 for long memory), W^in's column of each symbol uniform in
[-input_scale, input_scale).  The seed's text says a small alpha makes the
reservoir slow, its equation the opposite; we follow the equation: ``leak``
is alpha, the share of h_{t-1} kept.  No recurrent bias (*decision*).

Only the readout is learned, online: pi_t = softmax(w^T (1, h_t)), trained
by seed 000's writing step (eqs. 17-21 online: a discounted quasi-diagonal
Newton step with a prior, the symbols' sums discounted by evidence; the
GLNN's writing layer, ``online/writing.py``).  The alphabet is open as the
GLNN's is: code 0 is the escape, a first occurrence is scored on it and
named among the unseen, and once every symbol of the cap has been seen the
escape is left out of the softmax.

Everything is drawn from (seed, unit, ...) by a hash (``online/alphabet.py``'s
``unit_uniform``), and the spectral radius is estimated by power iteration in
basic IEEE operations: a seed gives the same reservoir on every machine.
"""

from .config import ESNConfig
from .learner import ESNLearner

__all__ = ["ESNConfig", "ESNLearner"]
