"""Why distant XOR (T = 20) is a coin toss online: replay, and the objective a stream learner has.

Seed 000's batch GLNN (10 units, fully connected, QDH + RBPM) learns distant XOR from 10,000 lines in about a
hundred steps (``bench/paper_table1.py --xor``), scoring only the bit after "=" (chi_t of eq. 16).  A stream
learner is not told which symbols matter: it learns every one.  This bench separates the two things that differ:

* ``replay``: the online GLNN (the ``glnn`` preset over the task's alphabet, with a window of ``--window``
  symbols, which holds a whole line) reads the training sequence ``--passes`` times, as a rehearsal of every past
  line would present them, and is scored on the validation lines after each pass (a copy of the learner reads
  them, so the learner itself never learns from them);
* ``objective``: the batch GLNN, the same network and steps as the paper's run, trained with chi_t = 1 on the
  answer bit only (seed 000's), on every symbol (a stream's), and on every symbol weighted by the inverse
  frequency of the symbol before it (so that the answer's position, which follows the rare "=", weighs as much
  as a bit's); the validation error after each ``--every`` steps.

    python bench/xor_online.py                       # both (about 15 CPU minutes)
    python bench/xor_online.py --parts objective --steps 100
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import command_line, machine, report  # noqa: E402

from seqd.core import tasks  # noqa: E402
from seqd.core.model import ModelSpec, initialize, symbol_frequencies  # noqa: E402
from seqd.core.online import OnlineConfig, OnlineLearner  # noqa: E402
from seqd.core.training.batch import BatchTrainer, TrainConfig, evaluate  # noqa: E402

LINES, VALIDATION = 10000, 5000  # bench/models_on_tasks.py's protocol


def _sequences(length: int):
    train = tasks.generate("xor", np.random.default_rng([0, 0]), LINES, length=length)
    valid = tasks.generate("xor", np.random.default_rng([0, 1]), VALIDATION, length=length)
    return train, valid


def replay(args, train, valid) -> list[str]:
    config = replace(OnlineConfig(), alphabet_cap=len(train.alphabet), window=args.window)
    learner = OnlineLearner(config)
    scored = valid.predict_mask != 0
    rows = ["| passes over the 10,000 lines | line presentations | validation error | answer bits (mean) | "
            "bits per symbol, validation | CPU s |", "|---:|---:|---:|---:|---:|---:|"]
    t0 = time.process_time()
    for k in range(1, args.passes + 1):
        learner.learn(train.symbols)
        bits = OnlineLearner.from_bytes(learner.to_bytes()).learn(valid.symbols)
        if k in (1, 2, 5) or k % 5 == 0 or k == args.passes:
            error = float(np.mean(bits[scored] >= 1.0))
            rows.append(f"| {k} | {k * LINES:,} | {100 * error:.1f}% | {bits[scored].mean():.3f} | "
                        f"{bits.mean():.4f} | {time.process_time() - t0:.0f} |")
            print(rows[-1], flush=True)
    return rows


OBJECTIVES = {
    "the answer bit only (seed 000)": lambda seq, A: seq.predict_mask,
    "every symbol (a stream)": lambda seq, A: np.ones(len(seq)),
    "every symbol, by the inverse frequency of the one before": lambda seq, A: _by_previous(seq.symbols, A),
}


def _by_previous(x: np.ndarray, A: int) -> np.ndarray:
    prev = np.concatenate(([x[-1]], x[:-1]))
    counts = np.bincount(prev, minlength=A).astype(np.float64)
    return (len(x) / A) / counts[prev]


def objective(args, train, valid) -> list[str]:
    A = len(train.alphabet)
    marks = list(range(args.every, args.steps + 1, args.every))
    rows = ["| training objective | " + " | ".join(f"step {m}" for m in marks) + " | CPU s |",
            "|---|" + "---:|" * (len(marks) + 1)]
    for name, weights in OBJECTIVES.items():
        chi = weights(train, A)
        spec = ModelSpec("glnn", 10, 10, "tanh", A)
        params = initialize(spec, *symbol_frequencies(train.symbols, chi, A), np.random.default_rng([0, 2]))
        trainer = BatchTrainer(spec, params, train.symbols, chi, TrainConfig("rbpm"))
        cells = []
        for _ in marks:
            trainer.run(steps=args.every)
            ev = evaluate(spec, trainer.params, valid.symbols, valid.predict_mask)
            cells.append(f"{100 * ev.error_rate:.1f}%")
            print(f"{name}: step {trainer.steps}, error {cells[-1]}", flush=True)
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {trainer.train_seconds:.0f} |")
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", nargs="+", choices=("replay", "objective"), default=["replay", "objective"])
    p.add_argument("--length", type=int, default=20, help="T (default 20)")
    p.add_argument("--passes", type=int, default=30, help="replay: passes over the training lines (default 30)")
    p.add_argument("--window", type=int, default=64, help="replay: the online GLNN's window (default 64)")
    p.add_argument("--steps", type=int, default=300, help="objective: batch steps, w and tau alternating (300)")
    p.add_argument("--every", type=int, default=50, help="objective: steps between validations (default 50)")
    p.add_argument("--section", default="xor_online_wall")
    p.add_argument("--no-write", action="store_true", help="print the tables without touching docs/benchmarks.md")
    args = p.parse_args()
    train, valid = _sequences(args.length)
    parts = []
    if "replay" in args.parts:
        parts += replay(args, train, valid) + ["", f"The online GLNN (`glnn` preset, window {args.window}) "
                                               "reading the training lines again and again; validation error on "
                                               "the answer bits (probability 1/2 or less), validation scored by a "
                                               "copy.", ""]
    if "objective" in args.parts:
        parts += objective(args, train, valid) + ["", "Seed 000's batch GLNN (10 units, fully connected, QDH + "
                                                  "RBPM, initial draw [0, 2]) under three training objectives; "
                                                  "validation error on the answer bits after each block of steps.",
                                                  ""]
    text = f"Command: `{command_line('xor_online.py')}`  \nMachine: {machine()}\n\n" + "\n".join(parts)
    report(args.section, text, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
