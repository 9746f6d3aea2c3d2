"""A bitwise context-mixing model of byte streams: seqd's fast byte model.

A byte x is 8 binary decisions, highest bit first, and its probability is
the product of theirs, p(x) = prod_{i=7..0} p(b_i | b_7..b_{i+1}, contexts):
the code length of a byte is the sum of its bits' (``mixing.py``).  Each
binary decision is predicted by logistic mixing, in the stretched domain,
of the predictions of the byte's context sources (``contexts.py``: the
order-k chain, column, word, field column, indirect; the 256-way model's
sources read as contexts of bits), of a match model and of a number model
(``predicted.py``); four mixers with weight sets selected by small contexts,
a final mixer, and two adaptive probability maps (``mixing.py``).  Each
source keeps, per context and nibble, one 64-byte bucket: the 15 nodes of
the nibble's tree, each with a probability and a bit history.  Since
revision 2 (seqd 0.21, preset ``bitwise-2``) each source's run votes too
(``runs.py``: the byte its context saw last, and how often in a row), and
so do the GLNN's recurrent units: seed 000's gated leaky network, whose
writing layer is the byte's binary tree, trained online by truncated
back-propagation with the Riemannian (RBPM) metric blocks kept by
Sherman-Morrison updates (``units.py``); three mixers remain.  The
versions and their presets: ``versions.py``.

Where the 256-way model (``seqd.core.online``) spends most of its time
voting over every symbol a source names and keeping a metric block for
each, this one touches one cache line per source per nibble and a few
hundred weights per bit.  Everything is deterministic: basic IEEE
operations, seqd's own exp and log, integers in the tables.

The alphabet is the 256 bytes, closed: the escape code of seqd's
open-alphabet interface is kept (code 0) with probability 0.
"""

from .config import BitsConfig
from .learner import BitsLearner

__all__ = ["BitsConfig", "BitsLearner"]
