"""A hidden Markov model trained by expectation-maximisation: seed 000's third sanity check (Table 1).

N hidden states on an oriented random graph: each state has ``degree``
outgoing edges, a loop on itself included (seed 000, footnote 16: the
degree is the alphabet's size, which gives the HMM a cost per symbol like
the networks'). State s_t writes x_t with probability e(s_t, x_t), then moves
along one of its edges, i -> j with probability a(i, j); the first state is
drawn from p_0.  Seed 000 §1.2 notes that this is its GNN with a linear
activation (eq. 10 becomes the forward recursion below).

Forward (scaled): alpha_0(i) = p_0(i) e(i, x_0) / c_0,
alpha_t(j) = sum_i alpha_{t-1}(i) a(i, j) e(j, x_t) / c_t, the c_t making each
alpha_t sum to 1, so that log P(x) = sum_t log c_t.  Backward: beta_{T-1} = 1,
beta_t(i) = sum_j a(i, j) e(j, x_{t+1}) beta_{t+1}(j) / c_{t+1}.  Expected
counts: state occupancy gamma_t(i) = alpha_t(i) beta_t(i) and edge use
xi_t(i, j) = alpha_t(i) a(i, j) e(j, x_{t+1}) beta_{t+1}(j) / c_{t+1}.
Each EM step sets p_0 = gamma_0, a(i, j) = sum_t xi_t(i, j) / sum_t gamma_t(i)
(over t < T-1), e(i, x) = sum_{t: x_t = x} gamma_t(i) / sum_t gamma_t(i); it
never lowers the training likelihood (Baum-Welch).

Initialisation as seed 000's footnote 16: each state's edge probabilities
from a Dirichlet(1/2, ..., 1/2) (Jeffreys) prior; its writing probabilities
the symbols' frequencies in the training sequence, each multiplied by a
uniform [0, 1] number, then normalised.  p_0 starts uniform.

A sequence is scored by its predictive probabilities P(x_t | x_<t) =
sum_j (sum_i alpha_{t-1}(i) a(i, j)) e(j, x_t), with seed 000 §4's
regularisation (``kernels/forward.py``'s ``regularized_log2_probs``).
"""

from .model import HMM, draw
from .trainer import HMMTrainer

__all__ = ["HMM", "HMMTrainer", "draw"]
