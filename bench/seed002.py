"""Seed 002's copying and adding problems as symbol streams, each learner online beside the memoryless baseline.

One learner reads a training stream of instances, then a validation stream of
1,000 (seed 002's test set); the regret is the validation stream's code length
on the scored symbols (the recalled digits, the sum), which the true law gives
probability 1, per instance.  Seed 002's baselines: copying 10 log2(8) = 30 bits
per instance, adding the entropy of the sum of two uniform digits (4.03 bits).

    python bench/seed002.py                 # T = 10, 50, 200 for each problem (a few minutes)
    python bench/seed002.py --lengths 10    # a quick look
    python bench/seed002.py --batch         # seed 002's models trained in batch instead (seqd train's batch-*)

With ``--batch``, seed 002's four models are trained on the training instances as one sequence
(``seqd train --model batch-scornn``, ``batch-enrnn``, ``batch-gru``; the LSTM is seed 000's batch LSTM, fully
connected), within a CPU budget per run, and scored on the validation instances at the end and at the checkpoint
an independent stopping sequence picks (``core/training/experiment.py``).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import command_line, machine, report  # noqa: E402

from seqd.core import tasks  # noqa: E402
from seqd.core.ctw import CTWConfig, CTWLearner  # noqa: E402
from seqd.core.esn import ESNConfig, ESNLearner  # noqa: E402
from seqd.core.lstm import LSTMConfig, LSTMLearner  # noqa: E402
from seqd.core.scornn import SCORNNConfig, SCORNNLearner  # noqa: E402
from seqd.core.online import OnlineConfig, OnlineLearner  # noqa: E402

BASELINE = {"copying": tasks.COPY_DIGITS * math.log2(8), "adding": tasks.adding_baseline_bits()}
VALIDATION = 1000  # instances: seed 002's test set
LEARNERS = {  # name: a learner over an alphabet of A symbols
    "GLNN, `OnlineConfig()`": lambda A: OnlineLearner(replace(OnlineConfig(), alphabet_cap=A)),
    "CTW, D = 24, α = 1/32": lambda A: CTWLearner(CTWConfig(alphabet_cap=A, depth=24, alpha=1 / 32, node_bits=20)),
    "echo-state network, 200 units, ρ = 0.95": lambda A: ESNLearner(ESNConfig(alphabet_cap=A, units=200)),
    # the window is the reach of the gradient: lstm-compress's 10, and 250, past the problems' spans (T + 20)
    "LSTM, 90 cells, window 10": lambda A: LSTMLearner(LSTMConfig(alphabet_cap=A)),
    "LSTM, 90 cells, window 250": lambda A: LSTMLearner(LSTMConfig(alphabet_cap=A, horizon=250)),
    "GRU, 90 cells, window 250": lambda A: LSTMLearner(LSTMConfig(alphabet_cap=A, cell="gru", horizon=250)),
    "scoRNN, 128 units, window 250": lambda A: SCORNNLearner(SCORNNConfig(alphabet_cap=A, units=128, horizon=250)),
    # the enrnn preset's proportions (3/8 of the units short-term, clipped at 30, margin 0.1), at the scoRNN's size
    "ENRNN, 80 + 48 units, window 250": lambda A: SCORNNLearner(SCORNNConfig(alphabet_cap=A, units=128, short=48,
                                                                             clip=30.0, margin=0.1, horizon=250)),
}


def regret_per_instance(make, task: str, length: int, train_size: int, seed: int = 0) -> float:
    train = tasks.generate(task, np.random.default_rng([seed, 0]), train_size, length=length)
    valid = tasks.generate(task, np.random.default_rng([seed, 1]), VALIDATION, length=length)
    learner = make(len(train.alphabet))
    learner.learn(train.symbols)
    bits = learner.learn(valid.symbols)
    scored = valid.predict_mask != 0.0  # (an unscored symbol's infinite code length is not counted as 0 x inf)
    return (float((bits[scored] * valid.predict_mask[scored]).sum()) + valid.true_log2_likelihood) / VALIDATION


# seed 002's models trained in batch: (column, seqd train's model, its method); each fully connected
BATCH_LEARNERS = [("scoRNN", "batch-scornn", "qdh"), ("ENRNN", "batch-enrnn", "qdh"),
                  ("LSTM (DH + FB)", "batch-lstm", "dhfb"), ("GRU", "batch-gru", "qdh")]


def batch_table(args) -> str:
    from seqd.core.training.experiment import Experiment, run

    chosen = [row for row in BATCH_LEARNERS if not args.only or any(o in row[0] for o in args.only)]
    lines = ["| problem | T | training instances | baseline (bits / instance) | "
             + " | ".join(f"{name}: end / stopped / training (steps)" for name, _, _ in chosen) + " |",
             "|---|---:|---:|---:|" + "---|" * len(chosen)]
    for task in ("copying", "adding"):
        for length in args.lengths:
            cells = []
            for name, model, method in chosen:
                exp = Experiment(task=task, model=model, method=method, units=args.units, degree=args.units,
                                 size=args.train, validation_size=VALIDATION, length=length, seconds=args.seconds,
                                 evaluations=args.evaluations)
                out = run(exp)
                train_bits = (-out.train_log2_likelihood) / args.train  # scored symbols' bits per instance
                # (the true law gives them probability 1, so this is the training regret per instance)
                cell = (out.validation_regret / VALIDATION, out.stopped_validation_regret / VALIDATION, train_bits,
                        out.steps)
                cells.append(cell)
                print(f"{task} T={length} {name}: end {cell[0]:.2f}, stopped {cell[1]:.2f}, training {cell[2]:.2f} "
                      f"bits per instance ({out.steps} steps, {out.train_seconds:.0f} s)", flush=True)
            lines.append(f"| {task} | {length} | {args.train:,} | {BASELINE[task]:.2f} | "
                         + " | ".join(f"{a:.2f} / {b:.2f} / {c:.2f} ({n})" for a, b, c, n in cells) + " |")
    lines += ["", f"Regret per instance (bits) on the scored symbols: on {VALIDATION:,} validation instances with "
                  "the parameters at the end of the budget, and at the checkpoint an independent stopping sequence "
                  f"picks; on the training instances at the end; training steps in brackets. {args.units} units "
                  f"(cells), {args.seconds:.0f} CPU s per run, seed 0; every model's state runs on from one "
                  "instance to the next (no resets), from h = 0 at the sequence's start."]
    return "\n".join(lines)


def table(args) -> str:
    chosen = {name: make for name, make in LEARNERS.items() if not args.only or any(o in name for o in args.only)}
    if not chosen:
        raise SystemExit(f"--only matches none of: {', '.join(LEARNERS)}")
    lines = ["| problem | T | training instances | baseline (bits / instance) | "
             + " | ".join(chosen) + " |", "|---|---:|---:|---:|" + "---:|" * len(chosen)]
    for task in ("copying", "adding"):
        for length in args.lengths:
            cells = []
            for name, make in chosen.items():
                cells.append(regret_per_instance(make, task, length, args.train))
                print(f"{task} T={length} {name}: {cells[-1]:.2f} bits per instance", flush=True)
            lines.append(f"| {task} | {length} | {args.train:,} | {BASELINE[task]:.2f} | "
                         + " | ".join(f"{c:.2f}" if np.isfinite(c) else "∞ (diverged)" for c in cells) + " |")
    lines += ["", f"Regret per validation instance (bits) on the scored symbols, {VALIDATION:,} validation "
                  "instances after the training stream, one learner reading both (random generators [0, 0] and "
                  "[0, 1]). Below the baseline, a learner carries something of the instance across its T steps; "
                  "∞: the learner's softmax gave a scored symbol probability 0 (its state had grown without bound)."]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[10, 50, 200], help="the T values (default 10 50 200)")
    p.add_argument("--train", type=int, default=2000, help="training instances (default 2000)")
    p.add_argument("--only", nargs="+", metavar="TEXT", help="only the learners whose name holds one of these")
    p.add_argument("--section", default="seed002_online", help="the docs/benchmarks.md section to write")
    p.add_argument("--no-write", action="store_true", help="print the table without touching docs/benchmarks.md")
    p.add_argument("--batch", action="store_true", help="seed 002's models trained in batch instead (section "
                   "seed002_batch unless --section)")
    p.add_argument("--units", type=int, default=32, help="with --batch: units or cells per model (default 32)")
    p.add_argument("--seconds", type=float, default=90.0, help="with --batch: CPU seconds per run (default 90)")
    p.add_argument("--evaluations", type=int, default=6, help="with --batch: checkpoints per run (default 6)")
    args = p.parse_args()
    if args.batch and args.section == "seed002_online":
        args.section = "seed002_batch"
    body = batch_table(args) if args.batch else table(args)
    text = f"Command: `{command_line('seed002.py')}`  \nMachine: {machine()}\n\n{body}\n"
    report(args.section, text, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
