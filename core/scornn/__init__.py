"""scoRNN, seed 002's scaled-Cayley orthogonal RNN (§2.5), and its ENRNN (§2.7), as online learners with seqd's
interface.

n hidden units; at each step (eqs. 2.58-2.59, with the modReLU of eq. 2.33)

    z_t = U x_t + W h_{t-1},      h_t = sgn(z_t) max(|z_t| + b, 0),

x_t the one-hot code of the symbol read (U's column of the code), b a
trained bias per unit.  The recurrent matrix is orthogonal by construction
(eq. 2.54): W = (I + A)^{-1} (I - A) D, A skew-symmetric and trained, D a
fixed diagonal of signs whose first ``negatives`` (the seed's rho) are -1.
A starts as 2 x 2 rotation blocks down its diagonal (``state.new_state``).

The prediction is a softmax over the active codes of v^T (1, h_t), over the
open alphabet as the other learners have it, stepped after every symbol at
``learning_rate`` (the LSTM's readout, ``lstm/cell.py``).  Once per window of
``horizon`` symbols, back-propagation through the window's steps gives the
gradient of its log-likelihood in U, b and W; U and b step at
``learning_rate``; A steps at ``skew_rate`` along Theorem 2.5.3's gradient
(eq. 2.60), V^T - V with V = (I + A)^{-T} G (D + W^T), G the gradient in W;
and W is formed again from the new A (Gauss-Jordan elimination, basic IEEE
operations only), orthogonal to rounding.  The seed trains A by RMSProp and
the rest by Adam; here every step is plain gradient, as the LSTM's.

Online, h is never reset to 0 as it is between the seed's sequences: with
W orthogonal, a positive b would add b to |h_j| at every step for ever, so
b is kept at or below 0 (it starts at 0), where the modReLU never grows the
state (and its derivatives stay bounded, Theorem 2.4.1).  A unit whose b
falls below every |z| it meets is dead, as a ReLU's can be.  With ``clip`` > 0
a window's gradient longer than ``clip`` is rescaled to it (seed 001,
Algorithm 2): both rates shrink by clip / |g|.

**ENRNN** (``short`` = m > 0; preset ``enrnn``).  The last m units are a
short-term state (eq. 2.80): W is block upper triangular,

    W = [ W^(L)  W^(C) ]     W^(L) the scoRNN's orthogonal matrix on the first q = n - m units,
        [   0    W^(S) ]     W^(S) = T / (rho(T) + margin) (eq. 2.90), rho the spectral radius,

and the same step and back-propagation run on it whole.  T starts as 2 x 2
blocks gamma [[cos t, -sin t], [sin t, cos t]] (eq. 2.97; tan(t/2) and gamma
drawn uniform, as A's blocks, so no sine is computed), and is W^(S) itself
until a step takes rho(T) past 1; from then on W^(S) is normalised and T
moves along Proposition 2.7.1's gradient (eq. 2.95), which needs T's
dominant eigenvalue and its right and left eigenvectors: ``eigen.py``
computes them inside the kernel (Hessenberg form, Francis's double-shift QR,
inverse iteration), with basic IEEE operations as everything else here.
``coupling`` adds W^(C) (eq. 2.82), trained by gradient; ``enrnn.py`` has
the steps.  Online, without the seed's resets between sequences, the ENRNN
needs clipping (without, T diverged on the first 30 kB of Apache's log and
the configuration refuses ``clip = 0``), and coupling is off by default: the
orthogonal state cannot dissipate the drive it adds (on a repeated phrase
the coupled preset's |h| passed 70 and its softmax underflowed).
"""

from .config import SCORNNConfig
from .learner import SCORNNLearner

__all__ = ["SCORNNConfig", "SCORNNLearner"]
