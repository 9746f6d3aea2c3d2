"""The settings of a rehearsing GLNN (``__init__``'s docstring says what each does), and its state's shapes."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..online.config import OnlineConfig
from ..settings import integers, numbers

# positions in the state's ``counts`` array
SYMBOLS = 0  # symbols learned
PREVIOUS = 1  # the last symbol read (0 before the first): its group's networks predict the next
FILLED = 2  # symbols in the block being filled
HEAD = 3  # the buffer's row being filled
COMPLETE = 4  # complete blocks in the buffer (at most ``blocks``)
SINCE = 5  # symbols since the last rehearsal (counted once a block is complete)
REHEARSALS = 6  # rehearsals taken: the next one steps on complete block REHEARSALS mod COMPLETE, oldest first
DRAWN = 7  # 1 once the networks were drawn from the first complete block's frequencies
COUNTS = 8

MAX_UNITS = 64
MAX_CAP = 256
ACTIVATIONS = ("tanh", "logistic")


@dataclass(frozen=True)
class RehearsalConfig:
    """Settings of a rehearsing GLNN."""

    alphabet_cap: int = 16  # symbols are integers in [0, alphabet_cap)
    # each network: seed 000's distant-XOR GLNN, 10 units, fully connected (the paper's Table 1 runs)
    units: int = 10
    degree: int = 10  # incoming units per unit, the self-loop included
    activation: str = "tanh"
    groups: int = 16  # the symbols read are split into min(groups, alphabet_cap) groups, symbol mod groups
    draws: int = 1  # networks per group, drawn apart, mixed by their code lengths (eq. 16 on the stream)
    block: int = 1 << 16  # symbols to a block of the rehearsal buffer
    blocks: int = 8  # complete blocks the buffer keeps (the oldest goes first)
    rehearsals: int = 24  # rehearsals while one block's worth of symbols arrives: each 2 steps of every network
    online: bool = True  # the glnn preset's online learner (OnlineConfig()) a member of every group's mixture
    uniform_share: float = 1.0 / 1024  # the uniform's share in each network's prediction (seed 000 §4)
    seed: int = 0  # draws the networks' graphs and their initial weights

    def __post_init__(self):
        integers(self, "alphabet_cap", "units", "degree", "groups", "draws", "block", "blocks", "rehearsals", "seed")
        numbers(self, "uniform_share")
        if not isinstance(self.online, bool):
            raise ValueError(f"online must be a bool, got {self.online!r}")
        if not 2 <= self.alphabet_cap <= MAX_CAP:
            raise ValueError(f"alphabet_cap must be in [2, {MAX_CAP}], got {self.alphabet_cap}")
        if not 1 <= self.units <= MAX_UNITS:
            raise ValueError(f"units must be in [1, {MAX_UNITS}], got {self.units}")
        if not 1 <= self.degree <= self.units:
            raise ValueError(f"degree must be in [1, units={self.units}], got {self.degree}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if not 1 <= self.groups <= MAX_CAP:
            raise ValueError(f"groups must be in [1, {MAX_CAP}], got {self.groups}")
        if not 1 <= self.draws <= 8:
            raise ValueError(f"draws must be in [1, 8], got {self.draws}")
        if not 64 <= self.block <= 1 << 20:
            raise ValueError(f"block must be in [64, 2^20] symbols, got {self.block}")
        if not 1 <= self.blocks <= 64:
            raise ValueError(f"blocks must be in [1, 64], got {self.blocks}")
        if not 1 <= self.rehearsals <= self.block:
            raise ValueError(f"rehearsals must be in [1, block={self.block}], got {self.rehearsals}")
        if not 0.0 < self.uniform_share < 1.0:
            raise ValueError(f"uniform_share must be in (0, 1), got {self.uniform_share}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")

    @property
    def networks(self) -> int:
        """The networks: ``draws`` for each group of symbols read."""
        return min(self.groups, self.alphabet_cap) * self.draws

    @property
    def members(self) -> int:
        """The members of a group's mixture: its draws, and the online learner if it is one."""
        return self.draws + int(self.online)

    @property
    def rehearsal_bytes(self) -> int:
        """The memory a rehearsal takes besides the state: the batch trainer's buffers over a block (potentials,
        activities and their back-propagated sums, the current and the trial pass: six of N + 1 a symbol, and two
        predictions of A)."""
        return 8 * (self.block + 1) * (6 * (self.units + 1) + 2 * self.alphabet_cap)

    @property
    def interval(self) -> int:
        """Symbols between two rehearsals."""
        return self.block // self.rehearsals


def online_config(config: RehearsalConfig) -> OnlineConfig:
    """The online member's configuration: the glnn preset's (seed 000's GLNN alone) over the alphabet, drawn
    from the learner's seed."""
    return OnlineConfig(alphabet_cap=config.alphabet_cap, seed=config.seed)


def state_shapes(config: RehearsalConfig) -> dict:
    """(shape, dtype) of every array of a learner of ``config`` (``state.RehearsalState``), in snapshot order;
    the online member's arrays are its own learner's (``learners.MODELS`` counts both)."""
    G, N1, A, D = config.networks, config.units + 1, config.alphabet_cap, config.degree + 1
    i, f, u = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.uint16)
    return {"symbol_of": ((A + 1,), i), "inputs": ((G, N1, D), i), "w": ((G, N1, A), f), "tau": ((G, A, N1, D), f), "rho": ((G, 0, N1), f),
            "v0": ((G, N1), f), "v": ((G, N1), f), "a": ((G, N1), f), "rates": ((G, 2), f),
            "mixture": ((min(config.groups, A), config.members), f), "buffer": ((config.blocks + 1, config.block), u), "before": ((config.blocks + 1,), i),
            "pi": ((config.draws, A), f), "work": ((3, max(N1, config.members)), f), "counts": ((COUNTS,), i)}


# the preset's bounds on a rehearsal: the memory of its buffers, and its work spread over the symbols
PRESET_REHEARSAL_BYTES = 48 << 20
PRESET_WORK = 1 << 19  # multiply-adds per symbol (some 0.3 ms on the machine of docs/benchmarks.md)
PRESET_BLOCK = 1 << 16


def rehearsal_work(config: RehearsalConfig) -> int:
    """The order of the multiply-adds the rehearsals spend per symbol: ``rehearsals`` per block of symbols, each
    two steps of every network over a block, a step some four passes over each symbol (the forward pass, the
    backward pass, the sums of the metric, a trial's forward pass), each pass a network's reading and softmax."""
    return 2 * 4 * config.rehearsals * config.networks * network_work(config)


def network_work(config: RehearsalConfig) -> int:
    """A network's multiply-adds on one symbol: its reading (eq. 13) and its softmax (eq. 6)."""
    return (config.units + 1) * (config.degree + 1 + config.alphabet_cap)


def preset(**settings) -> RehearsalConfig:
    """The ``rehearsal`` preset: RehearsalConfig's defaults, with the block and the rehearsals a setting does not
    fix scaled to the alphabet, so that a rehearsal's buffers take at most PRESET_REHEARSAL_BYTES and the
    rehearsals some PRESET_WORK multiply-adds per symbol: the block the largest power of two up to 2^16 within
    the memory, the rehearsals the most up to 24 within the work (at least one).  Over distant XOR's 6 symbols
    that is blocks of 2^16 and 24 rehearsals; over 16 symbols (the preset's cap), 2^15 and 13; over bytes,
    8,192 and one."""
    config = RehearsalConfig(**settings)
    if "block" not in settings:
        block = PRESET_BLOCK
        while block > 64 and replace(config, block=block).rehearsal_bytes > PRESET_REHEARSAL_BYTES:
            block //= 2
        config = replace(config, block=block, rehearsals=min(config.rehearsals, block))
    if "rehearsals" not in settings:
        most = PRESET_WORK // max(rehearsal_work(replace(config, rehearsals=1)), 1)
        config = replace(config, rehearsals=max(1, min(config.rehearsals, most)))
    return config
