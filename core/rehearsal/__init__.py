"""A GLNN for each group of symbols read, trained online by rehearsing a buffer of the stream's past blocks, mixed with
the online GLNN.

Seed 000's batch GLNN learns distant XOR from whole sequences; streamed
once, every online model here stays at chance (``docs/benchmarks.md``,
"Distant XOR online").  Two things differ from the batch run, and this
learner puts both back while staying a stream learner:

* **What each network is trained on.**  A stream learner learns every
  symbol, and the one answer bit in forty is drowned by the rest.  Here the
  symbols read are split into ``groups`` (symbol mod groups), and the
  networks of group g alone predict the symbol that follows a symbol of g:
  their objective is eq. (16) with chi_t = 1 where x_{t-1} is in g.  This is
  the GLNN's gating by the symbol read (eq. 13) carried to the writing
  layer and to the units: a block-diagonal GLNN.  On distant XOR the group
  of "=" is trained on the answers alone, seed 000's own chi, found from the
  stream rather than given.
* **How often each symbol is seen.**  The batch run presents each line about
  a hundred times.  The learner keeps the stream's last ``blocks`` blocks of
  ``block`` symbols (a ring, 2 bytes a symbol) and, ``rehearsals`` times
  while a block's worth of symbols arrives, takes seed 000's two batch steps
  (Section 2: the QDH writing step, eqs. 17-21, then the RBPM transition
  step, eqs. 24-29, each kept only if the block's log-likelihood does not go
  down, its rate grown by 1.1 or halved) of every network over one block,
  the blocks taken in turn, oldest first.  The rates carry over from block
  to block.

Each group's prediction is the Bayesian mixture of its members: its
``draws`` networks, drawn apart (graph and initial weights, eqs. 30-33, from
the generator (seed, network)), and, with ``online`` (the default), the
``glnn`` preset's online learner (seed 000's GLNN trained by its online
metric gradient, ``core/online``), one learner for the whole stream.  Each
member weighs 2^-(its code length on the positions the group predicted so
far): a draw whose steps found the structure takes over from one stuck at
chance, and where the rehearsed networks know less than the online GLNN
(the logs' bytes) the online GLNN carries the group, at most a bit per
group behind it (the log2 of the members) from the mixture's start and again
from the first block's, where the networks are drawn again.  A network's prediction is (1 - uniform_share) of its
softmax and uniform_share of the uniform distribution (seed 000 §4's
regularisation, at a fixed share since a stream has no end).

Until the first block is complete the networks are drawn as if every symbol
were as frequent; then they are drawn again from that block's frequencies
(eqs. 30-33 of the training data, the block standing for it) and start at
V^0.  Every network reads every symbol (its potentials V^t run on the whole
stream, eq. 13), so a symbol costs each network's reading, (N + 1) D
multiply-adds, and a softmax per draw of the group read.

A rehearsal is a forward pass, a backward pass, the metric's sums and the
trials' forward passes over ``block`` symbols for each network, so the
rehearsals cost some 8 ``rehearsals`` G (N + 1)(D + A) multiply-adds per
symbol (G networks; ``config.rehearsal_work``).  The ``rehearsal`` preset
(``config.preset``) scales the block and the rehearsals to the alphabet:
blocks of 2^16 symbols and 24 rehearsals for distant XOR's 6 symbols, blocks
of 8,192 and one rehearsal for bytes.  Rehearsals happen at fixed points of
the stream (``block / rehearsals`` symbols apart), so that chunking does not
change the bits, and snapshots continue the stream bit for bit.  The batch
steps run in NumPy and the kernels of ``core/kernels``: the same bits on the
same machine and NumPy build.
"""

from .config import RehearsalConfig
from .learner import RehearsalLearner

__all__ = ["RehearsalConfig", "RehearsalLearner"]
