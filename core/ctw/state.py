"""A CTW learner's arrays (their shapes and dtypes follow from the configuration: ``config.state_shapes``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .config import EMPTY, NODES, CTWConfig, state_shapes


class CTWState(NamedTuple):
    """Every array a CTW learner owns; A = alphabet cap, D = depth, P = the node pool (2^node_bits)."""

    code_of: np.ndarray  # (A,) int64: internal code of each symbol, 0 while unseen
    symbol_of: np.ndarray  # (A+1,) int64: symbol of each code (-1 for the escape)
    recent: np.ndarray  # (D,) int64: the last D codes, most recent first (0 before the stream's start)
    slots: np.ndarray  # (2P,) int64: hash table of the nodes, (parent, code) -> node, EMPTY if free
    keys: np.ndarray  # (2P,) int64: each slot's key, parent * (A + 1) + code
    n: np.ndarray  # (P, A+1) uint32: n_y(s) per node and code (code 0, the escape, stays 0)
    total: np.ndarray  # (P,) int64: n(s)
    log_beta: np.ndarray  # (P,) log(P_e(s) / prod_c P_w(cs))
    path: np.ndarray  # (D+1,) int64, work: the nodes of the current context path, -1 past the deepest
    p: np.ndarray  # (D+2, A+1), work: p_s(y) of each node of the path; row D+1 an unseen context's
    counts: np.ndarray  # (3,) int64: symbols seen, active codes, nodes used (config.SYMBOLS, ACTIVE, NODES)


def new_state(config: CTWConfig) -> CTWState:
    shapes = state_shapes(config)
    state = CTWState(**{name: np.zeros(*shapes[name]) for name in CTWState._fields})
    state.slots[:] = EMPTY
    state.symbol_of[0] = -1
    state.counts[NODES] = 1  # node 0: the root, the empty context
    return state
