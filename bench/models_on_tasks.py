"""Every online model of seqd on seed 000's tasks, streamed once: the regret of each beside the others.

One learner per model and task streams the training sequence (random generator
[0, 0]) and then the validation sequence ([0, 1]); the validation part's
prequential code length on the scored positions, minus the true model's, is
the regret (seed 000's protocol for its CTW sanity check, as ``bench/online.py
tasks`` runs it for the GLNN). Distant XOR scores only the bit after '='; its
error is the fraction of those bits given probability 1/2 or less. The models
run with their defaults (the presets of ``seqd.core.learners``, built for the
task's alphabet); the recurrent baselines also with a window long enough to
span a distant-XOR line.  ``rehearsal`` rehearses a buffer of the stream's
past blocks as it goes (``seqd.core.rehearsal``): its CPU time is printed.

    python bench/models_on_tasks.py                   # alphabet, music, aⁿbⁿ, distant XOR T = 20 and T = 100
    python bench/models_on_tasks.py --tasks anbn      # a quick look
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import command_line, machine, report  # noqa: E402

from seqd.core import tasks  # noqa: E402
from seqd.core.learners import MODELS, PRESETS  # noqa: E402
from seqd.core.lstm import LSTMConfig  # noqa: E402
from seqd.core.scornn import SCORNNConfig  # noqa: E402

# (label, the configuration over an alphabet of A symbols, as a preset builds it for A)
LEARNERS = [(f"`{name}`", functools.partial(PRESETS[name][1])) for name in ("glnn", "ctw", "esn", "lstm", "gru",
                                                                              "scornn", "enrnn", "rehearsal")] + [
    ("LSTM, window 128", functools.partial(LSTMConfig, horizon=128)),
    ("GRU, window 128", functools.partial(LSTMConfig, cell="gru", horizon=128)),
    ("scoRNN, window 128", functools.partial(SCORNNConfig, horizon=128)),
]
# (label, task, training size, options): the paper's sizes; distant XOR with 10,000 training lines as the paper's
RUNS = {
    "alphabet": ("alphabet", "alphabet", None, {}),
    "music": ("music", "music", None, {}),
    "anbn": ("aⁿbⁿ", "anbn", None, {}),
    "xor20": ("XOR T = 20", "xor", 10000, {"length": 20}),
    "xor100": ("XOR T = 100", "xor", 10000, {"length": 100}),
}


def regret(make, train, valid) -> tuple[float, float | None, float]:
    """(regret in bits, XOR error or None, seconds) of one learner (its configuration ``make(alphabet_cap=A)``)
    streaming ``train`` then ``valid``."""
    config = make(alphabet_cap=len(train.alphabet))
    learner = MODELS[_model(config)].learner(config)
    t0 = time.process_time()
    learner.learn(train.symbols)
    bits = learner.learn(valid.symbols)
    seconds = time.process_time() - t0
    scored = valid.predict_mask != 0
    error = float(np.mean(bits[scored] >= 1.0)) if scored.mean() < 1.0 else None
    return float((bits * valid.predict_mask).sum()) + valid.true_log2_likelihood, error, seconds


def _model(config) -> str:
    return next(name for name, model in MODELS.items() if type(config) is model.config)


def table(args) -> str:
    chosen = [(label, config) for label, config in LEARNERS if not args.only or any(o in label for o in args.only)]
    if not chosen:
        raise SystemExit(f"--only matches none of: {', '.join(label for label, _ in LEARNERS)}")
    names = [label for label, _ in chosen]
    lines = ["| task | validation symbols | true model (bits) | " + " | ".join(names) + " |",
             "|---|---:|---:|" + "---:|" * len(names)]
    costs = ["| task | symbols streamed | " + " | ".join(names) + " |", "|---|---:|" + "---:|" * len(names)]
    for key in args.tasks:
        label, task, size, opts = RUNS[key]
        train = tasks.generate(task, np.random.default_rng([0, 0]), size, **opts)
        valid = tasks.generate(task, np.random.default_rng([0, 1]), 5000 if task == "xor" else None, **opts)
        cells, cost = [], []
        for name, config in chosen:
            r, error, seconds = regret(config, train, valid)
            cells.append(f"{r:,.1f}" + ("" if error is None else f" ({100 * error:.1f}%)"))
            cost.append(f"{seconds:,.0f} s, {1e6 * seconds / (len(train) + len(valid)):,.0f} µs")
            print(f"{label} {name}: regret {r:.1f}" + ("" if error is None else f", error {100 * error:.1f}%")
                  + f" ({seconds:.0f} s)", flush=True)
        lines.append(f"| {label} | {len(valid):,} | {-valid.true_log2_likelihood:,.1f} | " + " | ".join(cells) + " |")
        costs.append(f"| {label} | {len(train) + len(valid):,} | " + " | ".join(cost) + " |")
    lines += ["", "Regret (bits) on the validation sequence after one pass over the training sequence, each model "
                  "online with its defaults (the presets; the last three with a window of 128 symbols); distant XOR: "
                  "10,000 training lines and 5,000 validation lines, regret and, in brackets, the error on the scored "
                  "bits. One run per cell (the models' own seed 0).", ""] + costs + [
                  "", "CPU time of each run (training and validation streamed), and per symbol streamed."]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=list(RUNS), choices=list(RUNS))
    p.add_argument("--only", nargs="+", metavar="TEXT", help="only the learners whose label holds one of these")
    p.add_argument("--section", default="models_on_tasks", help="the docs/benchmarks.md section to write")
    p.add_argument("--no-write", action="store_true", help="print the table without touching docs/benchmarks.md")
    args = p.parse_args()
    text = f"Command: `{command_line('models_on_tasks.py')}`  \nMachine: {machine()}\n\n{table(args)}\n"
    report(args.section, text, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
