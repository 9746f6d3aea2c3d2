"""The training methods of seed 000's Table 1, by name.

Invariant methods (seed 000 §2): the writing weights take the quasi-diagonal
Hessian step (QDH, eqs. 17-21); the transition weights take a metric step in
the recurrent backpropagated metric (RBPM, eq. 24) or the recurrent unitwise
outer-product metric (RUOP, eq. 23), with full per-(unit, symbol) blocks
(eqs. 25-28) or their quasi-diagonal reduction (eqs. 34-35).

Non-invariant baselines (seed 000 §4, "Reference RNN training"): the inverse
diagonal Hessian for the writing weights (DH) with, for the transition
weights, either frequency-adjusted backpropagation (FB) or root-mean-square
gradient rescaling (RMS).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kernels.backward import NO_MODULUS, RBPM, RUOP


@dataclass(frozen=True)
class Method:
    name: str
    writing: str  # "qdh" or "dh"
    transition: str  # "metric", "fb" or "rms"
    modulus: int  # RBPM, RUOP or NO_MODULUS
    quasi_diagonal: bool  # metric blocks reduced to their quasi-diagonal
    description: str

    @property
    def invariant(self) -> bool:
        return self.transition == "metric"


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("rbpm", "qdh", "metric", RBPM, False, "QDH + recurrent backpropagated metric, full blocks"),
        Method("ruop", "qdh", "metric", RUOP, False, "QDH + recurrent unitwise outer-product metric, full blocks"),
        Method("qdrbpm", "qdh", "metric", RBPM, True, "QDH + quasi-diagonal RBPM"),
        Method("qdruop", "qdh", "metric", RUOP, True, "QDH + quasi-diagonal RUOP"),
        Method("dhfb", "dh", "fb", NO_MODULUS, False, "diagonal Hessian + frequency-adjusted backpropagation"),
        Method("rms", "dh", "rms", NO_MODULUS, False, "diagonal Hessian + RMS-rescaled backpropagation"),
    )
}


def get_method(name: str, model: str) -> Method:
    """Look a method up by name, refusing combinations seed 000 rules out."""
    try:
        method = METHODS[name]
    except KeyError:
        raise ValueError(f"method must be one of {tuple(METHODS)}, got {name!r}") from None
    if model == "rnn" and method.transition == "metric" and not method.quasi_diagonal:
        raise ValueError(
            f"method {name!r} needs per-symbol metric blocks, which an RNN does not have: its shared "
            "transition weights couple every symbol, so the full metric is quadratic in the alphabet "
            "(seed 000 §3.4). Use 'qd" + name + "' for RNNs."
        )
    return method
