"""Context-tree weighting (CTW): seed 000's sanity check, as an online learner with seqd's interface.

Seed 000 (Section 4, "Sanity checks") reports CTW, "a well-known, efficient
online text prediction method", presented with the training sequence and
then the validation sequence; Table 1 gives its regret on the validation
part.  This is the multi-alphabet CTW of Willems, Shtarkov and Tjalkens
(IEEE Trans. Inf. Theory 41(3), 1995; the multi-alphabet form of Tjalkens,
Shtarkov and Willems, 1993): every context s of length at most ``depth``
holds a Krichevsky-Trofimov (KT) estimate

    P_e(y | s) = (n_y(s) + alpha) / (n(s) + alpha |A|)

over the alphabet (alpha = 1/2: the KT estimate; a smaller alpha trusts a
context's first counts more, which pays over large alphabets), and the model is the mixture over all context trees of
depth at most D, computed along the context path by

    P_w(s) = 1/2 P_e(s) + 1/2 prod_c P_w(cs)   (d(s) < D),    P_w(s) = P_e(s)   (d(s) = D).

Per symbol only the D + 1 nodes on the current path change.  With
beta(s) = P_e(s) / prod_c P_w(cs), held as log beta, the next-symbol
probability at node s of depth d < D is

    p_s(y) = (beta(s) P_e(y | s) + p_cs(y)) / (beta(s) + 1),

cs the child on the path, p at the leaf its KT estimate; after y is seen,
beta(s) <- beta(s) P_e(y | s) / p_cs(y), then the counts on the path grow.

The alphabet is open, as the GLNN's is (``online/alphabet.py``): code 0 is
the escape, which every KT estimate counts as one more letter with count 0
until every symbol of the cap has been seen; a first occurrence is scored on
the escape and then named among the symbols not yet seen.  Each node's
estimate is the product of the conditionals it gave, so the mixture stays a
sequential probability assignment while the alphabet grows.  Contexts before
the stream's start read code 0.  Nodes live in a pool of 2^node_bits, found
by hashing (parent, code); when the pool is full no node is added and a path
ends at its deepest existing node (whose child then predicts uniformly, as an
unseen context does).  Every operation is a basic IEEE operation or seqd's
own exp/log (``kernels/elementary.py``): the same bits on every machine.
A node whose total count reaches 2^30 halves its counts (rounding up), so
a stream can run for ever; below that the model is exactly the one above.
"""

from .config import CTWConfig
from .learner import CTWLearner

__all__ = ["CTWConfig", "CTWLearner"]
