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

* ``experts``: the same batch network taking its steps as a stream learner with a rehearsal buffer would, on
  ``--chunk`` lines at a time (in the first pass each block of lines as it arrives; then again and again, for
  ``--rehearsals`` passes in all), under two ways of learning every symbol: one network, and one network for
  each symbol read, which alone predicts the symbol after it and so is trained on those positions only (the
  GLNN's gating, eq. 13, carried to the writing layer and to the units themselves); seed 000's answer-bit
  objective, which a stream cannot have, beside them;
* ``draws``: that answering network alone from ``--draws`` initial draws: how often the route learns;
* ``rehearsal``: the online learner built on that route (the ``rehearsal`` preset, ``seqd.core.rehearsal``),
  streamed once as ``bench/models_on_tasks.py --tasks xor20`` streams it, from ``--draws`` seeds.

    python bench/xor_online.py                       # replay and objective (about 15 CPU minutes)
    python bench/xor_online.py --parts objective --steps 100
    python bench/xor_online.py --parts experts --rehearsals 12
    python bench/xor_online.py --parts draws --draws 8 --rehearsals 40
    python bench/xor_online.py --parts rehearsal --draws 4   # about 20 CPU minutes
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
from seqd.core.learners import PRESETS  # noqa: E402
from seqd.core.online import OnlineConfig, OnlineLearner  # noqa: E402
from seqd.core.rehearsal import RehearsalLearner  # noqa: E402
from seqd.core.training.batch import BatchTrainer, TrainConfig, evaluate  # noqa: E402

LINES, VALIDATION = 10000, 5000  # bench/models_on_tasks.py's protocol


def _network(A: int) -> ModelSpec:
    """Seed 000's batch GLNN of the distant XOR runs: 10 units, fully connected."""
    return ModelSpec("glnn", 10, 10, "tanh", A)


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
        spec = _network(A)
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


def _blocks(train, chunk: int) -> list[tuple[int, int]]:
    """The training sequence cut into blocks of ``chunk`` whole lines (the last may hold fewer): (start, end)."""
    ends = np.flatnonzero(train.symbols == train.alphabet.index("\n")) + 1
    starts = np.concatenate(([0], ends[:-1]))
    return [(starts[c], ends[min(c + chunk, len(ends)) - 1]) for c in range(0, len(ends), chunk)]


def _rehearsed(spec, params, train, chi, blocks, rates):
    """One pass over the training ``blocks``, a step on each (2 steps: w, then tau; the rates carried from step to
    step in ``rates``); returns the parameters."""
    for a, b in blocks:
        if not chi[a:b].any():
            continue
        trainer = BatchTrainer(spec, params, train.symbols[a:b], chi[a:b], TrainConfig("rbpm"))
        if rates:
            trainer.rate_w, trainer.rate_tau = rates
        trainer.run(steps=2)
        params, rates[:] = trainer.params, [trainer.rate_w, trainer.rate_tau]
    return params


def experts(args, train, valid) -> list[str]:
    A = len(train.alphabet)
    spec = _network(A)
    # the position after each symbol: the first symbol of a sequence follows a line's end
    after = {name: np.concatenate(([train.alphabet.index("\n")], seq.symbols[:-1])) for name, seq in
             (("train", train), ("valid", valid))}
    answers = valid.predict_mask != 0
    blocks = _blocks(train, args.chunk)
    marks = sorted({1, 2, 4} | set(range(args.every_pass, args.rehearsals + 1, args.every_pass)) | {args.rehearsals})
    marks = [m for m in marks if m <= args.rehearsals]
    # each learner: its networks' chi, and whether it learns every symbol (a stream's: its bits per symbol mean
    # something)
    learners = {
        "one network, every symbol (a stream)": ([np.ones(len(train))], True),
        "one network per symbol read, every symbol (a stream)": ([(after["train"] == s).astype(np.float64)
                                                                  for s in range(A)], True),
        "one network, the answer bit only (seed 000's chi; not a stream's)": ([train.predict_mask], False),
    }
    rows = ["| learner | initial draw | " + " | ".join(f"pass {m}" for m in marks) + " | answer bits (mean) | "
            "bits per symbol, validation | CPU s |", "|---|---:|" + "---:|" * (len(marks) + 3)]
    for name, (chis, stream) in learners.items():
        for draw in range(args.draws):
            t0 = time.process_time()
            nets = [initialize(spec, *symbol_frequencies(train.symbols, chi, A),
                               np.random.default_rng([0, 2 + draw])) for chi in chis]
            rates = [[] for _ in chis]
            cells, bits, answer = [], None, None
            for k in range(1, args.rehearsals + 1):
                nets = [_rehearsed(spec, p, train, chi, blocks, r) for p, chi, r in zip(nets, chis, rates)]
                if k not in marks:
                    continue
                lp = np.empty(len(valid))
                for s, p in enumerate(nets):  # each position scored by its own network
                    mine = (after["valid"] == s) if len(nets) > 1 else np.ones(len(valid), bool)
                    lp[mine] = evaluate(spec, p, valid.symbols).log2_probs[mine]
                cells.append(f"{100 * np.mean(lp[answers] <= -1.0):.1f}%")
                bits, answer = -lp.mean(), -lp[answers].mean()
                print(f"{name}, draw {draw}: pass {k}, error {cells[-1]}, answer bits {answer:.3f}, "
                      f"{bits:.4f} bits/symbol", flush=True)
            rows.append(f"| {name} | [0, {2 + draw}] | " + " | ".join(cells) + f" | {answer:.3f} | "
                        + (f"{bits:.4f}" if stream else "—") + f" | {time.process_time() - t0:.0f} |")
    return rows


def draws(args, train, valid) -> list[str]:
    """The network that answers (the one of the symbol "=", whose positions are the answers: seed 000's chi)
    over many initial draws, ``args.rehearsals`` passes of blocks each: how often the route learns."""
    A = len(train.alphabet)
    spec = _network(A)
    chi = train.predict_mask
    blocks = _blocks(train, args.chunk)
    rows = ["| initial draw | first pass below 10 % | first pass below 1 % | error after the last pass | CPU s |",
            "|---:|---:|---:|---:|---:|"]
    below = 0
    for draw in range(args.draws):
        t0 = time.process_time()
        params = initialize(spec, *symbol_frequencies(train.symbols, chi, A), np.random.default_rng([0, 2 + draw]))
        rates, first10, first1, error = [], None, None, None
        for k in range(1, args.rehearsals + 1):
            params = _rehearsed(spec, params, train, chi, blocks, rates)
            error = evaluate(spec, params, valid.symbols, valid.predict_mask).error_rate
            first10 = first10 or (k if error < 0.10 else None)
            first1 = first1 or (k if error < 0.01 else None)
        below += error < 0.01
        rows.append(f"| [0, {2 + draw}] | {first10 or '—'} | {first1 or '—'} | {100 * error:.2f}% | "
                    f"{time.process_time() - t0:.0f} |")
        print(rows[-1], flush=True)
    return rows + ["", f"**{below} of {args.draws} draws end below 1 %** after {args.rehearsals} passes of blocks of "
                   f"{args.chunk:,} lines."]


def rehearsal(args, train, valid) -> list[str]:
    """The ``rehearsal`` preset (``seqd.core.rehearsal``) streaming the training lines once, then the validation
    lines, as ``bench/models_on_tasks.py --tasks xor20`` streams them, from ``--draws`` seeds (0, 1, ...): the
    error on the validation answers as it goes on learning, and the validation lines' bits."""
    make = PRESETS["rehearsal"][1]
    rows = ["| seed | error, training answers: first quarter / second / third / last | validation error | "
            "validation regret (bits) | bits per symbol, validation | CPU s | µs per symbol |",
            "|---:|---|---:|---:|---:|---:|---:|"]
    train_answers, answers = train.predict_mask != 0, valid.predict_mask != 0
    for seed in range(args.draws):
        learner = RehearsalLearner(make(alphabet_cap=len(train.alphabet), seed=seed))
        t0 = time.process_time()
        bits = learner.learn(train.symbols)
        quarters = [f"{100 * np.mean(q >= 1.0):.1f}%" for q in np.array_split(bits[train_answers], 4)]
        vbits = learner.learn(valid.symbols)
        seconds = time.process_time() - t0
        regret = float((vbits * valid.predict_mask).sum()) + valid.true_log2_likelihood
        rows.append(f"| {seed} | {' / '.join(quarters)} | {100 * np.mean(vbits[answers] >= 1.0):.2f}% | "
                    f"{regret:,.1f} | {vbits.mean():.4f} | {seconds:.0f} | "
                    f"{1e6 * seconds / (len(train) + len(valid)):.0f} |")
        print(rows[-1], flush=True)
    return rows


# each part: the function that runs it (its table's rows) and the caption under its table
PARTS = {
    "replay": (replay, lambda args: f"The online GLNN (`glnn` preset, window {args.window}) reading the training "
               "lines again and again; validation error on the answer bits (probability 1/2 or less), validation "
               "scored by a copy."),
    "objective": (objective, lambda args: "Seed 000's batch GLNN (10 units, fully connected, QDH + RBPM, initial "
                  "draw [0, 2]) under three training objectives; validation error on the answer bits after each "
                  "block of steps."),
    "experts": (experts, lambda args: f"The batch GLNN of the objectives above taking its steps on {args.chunk:,} "
                "lines at a time (2 steps, w then tau, per block; the rates carried from block to block), pass "
                "after pass; validation error on the answer bits, and the validation sequence's bits per symbol, "
                "each position scored by the network that predicts it."),
    "draws": (draws, lambda args: "The network that answers (the one of the symbol \"=\", trained on the positions "
              "after it) alone, from several initial draws, stepping as above; validation error on the answer bits "
              "after each pass."),
    "rehearsal": (rehearsal, lambda args: "The `rehearsal` preset over the task's alphabet (a network for each "
                  "symbol read and the online GLNN, mixed; blocks of 2^16 symbols, 24 rehearsals a block), from "
                  "several seeds, each streaming the 10,000 training lines once and then the 5,000 validation lines "
                  "as it goes on learning; error on the answer bits (probability 1/2 or less)."),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", nargs="+", choices=tuple(PARTS),
                   default=["replay", "objective"], help="the parts to run (default: replay and objective)")
    p.add_argument("--length", type=int, default=20, help="T (default 20)")
    p.add_argument("--passes", type=int, default=30, help="replay: passes over the training lines (default 30)")
    p.add_argument("--window", type=int, default=64, help="replay: the online GLNN's window (default 64)")
    p.add_argument("--steps", type=int, default=300, help="objective: batch steps, w and tau alternating (300)")
    p.add_argument("--every", type=int, default=50, help="objective: steps between validations (default 50)")
    p.add_argument("--chunk", type=int, default=1000, help="experts: lines to a rehearsal step (default 1000)")
    p.add_argument("--rehearsals", type=int, default=16, help="experts: passes over the lines (default 16)")
    p.add_argument("--every-pass", type=int, default=4, help="experts: passes between validations (default 4)")
    p.add_argument("--draws", type=int, default=2, help="experts, draws: initial draws; rehearsal: seeds (default 2)")
    p.add_argument("--section", default="xor_online_wall")
    p.add_argument("--no-write", action="store_true", help="print the tables without touching docs/benchmarks.md")
    args = p.parse_args()
    train, valid = _sequences(args.length)
    parts = []
    for name in PARTS:  # in the table's order, whatever the command line's
        if name in args.parts:
            parts += PARTS[name][0](args, train, valid) + ["", PARTS[name][1](args), ""]
    text = f"Command: `{command_line('xor_online.py')}`  \nMachine: {machine()}\n\n" + "\n".join(parts)
    report(args.section, text, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
