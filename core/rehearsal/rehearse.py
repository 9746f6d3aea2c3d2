"""A rehearsal: seed 000's batch steps (Section 2: a step on w, then one on tau and V^0, each kept only if the
block's log-likelihood, eq. 16, does not go down) of every network on one block of the buffer."""

from __future__ import annotations

import numpy as np

from ..training.batch import BatchTrainer, TrainConfig
from .config import REHEARSALS, SINCE, RehearsalConfig
from .state import RehearsalState, groups_of, params_of, spec_of
from .stream import rehearsal_block

STEPS = 2  # a step on w, then one on tau and V^0
TRAINING = TrainConfig("rbpm")  # seed 000's QDH writing step and RBPM transition step (Table 1's GLNN rows)


def block_of(config: RehearsalConfig, state: RehearsalState, row: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, previous group): the buffer's block in ``row`` as symbols, and the group of the symbol read before
    each of them (the networks of that group predict it)."""
    x = state.buffer[row].astype(np.int64)
    previous = np.concatenate(([state.before[row]], x[:-1])) % groups_of(config)
    return x, previous


def rehearse(config: RehearsalConfig, state: RehearsalState) -> None:
    """Every network's two steps on the next block of the buffer (``stream.rehearsal_block``), from V^0 over the
    block, on the positions its group predicts (chi of eq. 16), at the rates its last rehearsal left (eta_0 =
    1/N at the first).  A network whose group predicts nothing in the block is left as it is."""
    x, previous = block_of(config, state, rehearsal_block(state.counts, config.blocks + 1))
    spec = spec_of(config)
    for n in range(config.networks):
        chi = (previous == n // config.draws).astype(np.float64)
        if not chi.any():
            continue
        params = params_of(state, n)
        trainer = BatchTrainer(spec, params, x, chi, TRAINING)
        if state.rates[n, 0] > 0.0:
            trainer.rate_w, trainer.rate_tau = state.rates[n]
        trainer.run(steps=STEPS)
        for name, value in trainer.params.arrays().items():
            np.copyto(getattr(params, name), value)
        state.rates[n] = trainer.rate_w, trainer.rate_tau
    state.counts[REHEARSALS] += 1
    state.counts[SINCE] = 0
