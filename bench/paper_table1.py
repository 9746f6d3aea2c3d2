"""Seed 000's Table 1 on this machine: cumulative validation regret (bits) per task and method.

Each run draws its own training and validation sequences from the task's
exact law (paper sizes: 1000 alphabet lines, 2700 music bars, 10 aⁿbⁿ blocks),
trains for the paper's CPU budget on one core (30 min alphabet, 10 min music
and aⁿbⁿ), and scores the validation sequence with §4's regularisation.
Runs go two at a time (one core each); results are written to
``docs/benchmarks.md`` with this command line.

    python bench/paper_table1.py                       # the full table (about 1 h on 2 cores)
    python bench/paper_table1.py --budget-scale 0.05   # a quick look
    python bench/paper_table1.py --xor                 # distant XOR, T = 20, 8 seeds
    python bench/paper_table1.py --ctw                 # the sanity checks: CTW (a sweep) and bzip2 (a minute)
    python bench/paper_table1.py --hmm --budget-scale 0.1   # the HMM by EM over the paper's sizes
    python bench/paper_table1.py --whole --budget-scale 0.05  # every network row of Table 1, three sizes each
    python bench/paper_table1.py --why whole.json --budget-scale 0.2   # each cell's winner again, 4x the time
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import command_line, machine, report, run_all  # noqa: E402

PAPER_BUDGET = {"alphabet": 1800.0, "music": 600.0, "anbn": 600.0}
# (model, method, units, degree) per task; sizes from the paper's sweep 4 * sqrt(2)^k
DEFAULT_RUNS = {
    "alphabet": [("glnn", "rbpm", 23, 3), ("rnn", "dhfb", 45, 3)],
    "music": [("glnn", "rbpm", 23, 3), ("rnn", "dhfb", 45, 3)],
    "anbn": [("glnn", "rbpm", 4, 3), ("rnn", "dhfb", 8, 3)],
}


def paper_cell(model: str, method: str, task: str, spec: str = ",.1f") -> str:
    """The paper's figure for a cell of Table 1, formatted by ``spec``; empty for a row the table does not have."""
    paper = PAPER_ROWS.get((model, method), {}).get(task)
    return "" if paper is None else format(paper, spec)


def winners(results: list[dict]) -> dict:
    """The run with the least early-stopped regret per cell (model, method, task) among ``results``."""
    best: dict = {}
    for res in results:
        e = res["experiment"]
        key = (e["model"], e["method"], e["task"])
        if key not in best or res["stopped_validation_regret"] < best[key]["stopped_validation_regret"]:
            best[key] = res
    return best


def parse_run(text: str) -> tuple[str, str, str, int, int, int | None]:
    """TASK:MODEL:METHOD:UNITS:DEGREE[:SEED]"""
    task, model, method, units, degree, *seed = text.split(":")
    return task, model, method, int(units), int(degree), int(seed[0]) if seed else None


def table1(args) -> str:
    runs = [parse_run(r) for r in args.run] if args.run else [
        (task, *cfg, None) for task in args.tasks for cfg in DEFAULT_RUNS[task]
    ]
    jobs, labels = [], []
    for task, model, method, units, degree, only_seed in runs:
        seconds = PAPER_BUDGET[task] * args.budget_scale
        for seed in range(args.seeds) if only_seed is None else [only_seed]:
            jobs.append(["train", "--task", task, "--model", model, "--method", method, "--units", str(units),
                         "--degree", str(degree), "--seconds", str(seconds), "--seed", str(seed), "--evaluations", str(args.evaluations)]
                        + (["--patience", str(args.patience)] if args.patience else []))
            labels.append((task, model, method, units, degree, seed, seconds))
    t0 = time.time()

    def done(k, res):
        task, model, method, units, degree, seed, _ = labels[k]
        print(f"[{time.time() - t0:7.0f} s] {task:8s} {model}/{method} N={units} d={degree} seed {seed}: "
              f"end {res['validation_regret']:.1f}, early-stopped {res['stopped_validation_regret']:.1f}, "
              f"best {res['best_validation_regret']:.1f} "
              f"({res['steps']} steps)", flush=True)

    results = run_all(jobs, args.jobs, done)
    if args.save:
        Path(args.save).write_text(json.dumps(results))
    lines = [
        "| task | model / method | N | d | seed | CPU budget | CPU used | steps | regret at the end (bits) "
        "| regret, early-stopped on an independent sequence (bits) | best checkpoint (bits) | paper (bits) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (task, model, method, units, degree, seed, seconds), res in zip(labels, results):
        lines.append(
            f"| {task} | {model.upper()} {method} | {units} | {degree} | {seed} | {seconds:.0f} s | {res['train_seconds']:.0f} s | "
            f"{res['steps']} | {res['validation_regret']:.1f} | {res['stopped_validation_regret']:.1f} | "
            f"{res['best_validation_regret']:.1f} | {paper_cell(model, method, task, '.1f')} |"
        )
    if any(res["stopped_regret_by_place"] for res in results):  # where each run's regret is paid
        lines += ["", "| task | model / method | N | seed | early-stopped regret (bits) | of which, by place "
                      "(`tasks.places`) | paper (bits) |", "|---|---|---:|---:|---:|---|---:|"]
        for (task, model, method, units, degree, seed, seconds), res in zip(labels, results):
            lines.append(f"| {task} | {model.upper()} {method} | {units} | {seed} | "
                         f"{res['stopped_validation_regret']:,.1f} | "
                         + "; ".join(f"{name} {bits:,.1f}" for name, bits in res["stopped_regret_by_place"].items())
                         + f" | {paper_cell(model, method, task)} |")
    groups: dict = {}
    for (task, model, method, units, degree, seed, seconds), res in zip(labels, results):
        groups.setdefault((task, model, method, units, degree), []).append(res["stopped_validation_regret"])
    if any(len(g) > 1 for g in groups.values()):  # several draws of the task: how much one cell moves with them
        lines += ["", "| task | model / method | N | d | draws | early-stopped regret: least | median | most "
                      "| paper (bits) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for (task, model, method, units, degree), regrets in groups.items():
            lines.append(f"| {task} | {model.upper()} {method} | {units} | {degree} | {len(regrets)} | "
                         f"{min(regrets):,.1f} | {float(np.median(regrets)):,.1f} | {max(regrets):,.1f} | "
                         f"{paper_cell(model, method, task)} |")
    return "\n".join(lines)


PAPER_CTW = {"alphabet": 18272.1, "music": 3611.0, "anbn": 143.5}  # seed 000, Table 1, "Context tree weighting"
PAPER_BZIP2 = {"alphabet": 27206.1, "music": 6035.7, "anbn": 244.0}  # seed 000, Table 1, "bzip2"
CTW_DEPTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
CTW_ALPHAS = (1 / 2, 1 / 8, 1 / 32, 1 / 128)  # the estimate's pseudo-count; 1/2 is Krichevsky-Trofimov's
CTW_SEEDS = (0, 1, 2)


def ctw(args) -> str:
    """Seed 000's sanity checks: CTW reads the training sequence, then the validation sequence, whose code
    length minus the true model's is the regret (a sweep of depths and pseudo-counts); bzip2 by the paper's
    rule, the bits of training + validation compressed minus those of training alone; three draws."""
    import bz2

    import numpy as np

    from seqd.core import tasks
    from seqd.core.ctw import CTWConfig, CTWLearner

    lines = ["| task | draw | bzip2 -9 | paper | CTW, KT (alpha = 1/2), best depth | CTW, best over the sweep "
             "(D, alpha) | CTW regret by depth, at that alpha | paper |", "|---|---:|---:|---:|---:|---:|---|---:|"]
    for task in PAPER_CTW:
        for seed in CTW_SEEDS:
            train = tasks.generate(task, np.random.default_rng([seed, 0]), None)
            valid = tasks.generate(task, np.random.default_rng([seed, 1]), None)
            regret = {}
            for alpha in CTW_ALPHAS:
                for depth in CTW_DEPTHS:
                    learner = CTWLearner(CTWConfig(alphabet_cap=len(train.alphabet), depth=depth, node_bits=20,
                                                   alpha=alpha))
                    learner.learn(train.symbols)
                    bits = learner.learn(valid.symbols)
                    regret[depth, alpha] = float((bits * valid.predict_mask).sum()) + valid.true_log2_likelihood
                print(f"{task} draw {seed} alpha {alpha:g}: " + ", ".join(
                    f"D={d} {regret[d, alpha]:.1f}" for d in CTW_DEPTHS), flush=True)
            text, both = train.text.encode(), train.text.encode() + valid.text.encode()
            bzip2 = 8 * (len(bz2.compress(both, 9)) - len(bz2.compress(text, 9))) + valid.true_log2_likelihood
            kt = min(CTW_DEPTHS, key=lambda d: regret[d, 0.5])
            best_d, best_a = min(regret, key=regret.get)
            by_depth = " / ".join(f"{regret[d, best_a]:,.0f}" for d in CTW_DEPTHS)
            lines.append(f"| {task} | {seed} | {bzip2:,.1f} | {PAPER_BZIP2[task]:,.1f} | {regret[kt, 0.5]:,.1f} "
                         f"(D = {kt}) | **{regret[best_d, best_a]:,.1f}** "
                         f"(D = {best_d}, 1/{round(1 / best_a)}) | {by_depth} | {PAPER_CTW[task]:,.1f} |")
    lines += ["", "Regret (bits) on the validation sequence of each task at the paper's sizes (draw s: training "
                  "sequence from random generator [s, 0], validation from [s, 1], as `bench/online.py tasks` "
                  "draws them with s = 0); `seqd.core.ctw` over the task's alphabet, depths D = "
                  + ", ".join(map(str, CTW_DEPTHS)) + ", pseudo-counts alpha = 1/2, 1/8, 1/32, 1/128, a pool of "
                  "2^20 nodes; bzip2: Python's bz2 (libbzip2) at level 9 on the sequences' text, the bits of "
                  "training + "
                  "validation minus those of training alone, minus the true model's. Paper: seed 000's Table 1."]
    return "\n".join(lines)


# every network row of Table 1 that seqd trains: (model, method) -> the paper's figures
PAPER_ROWS = {
    ("rnn", "dhfb"): {"alphabet": 7616.8, "music": 2898.9, "anbn": 122.4},
    ("rnn", "rms"): {"alphabet": 6721.5, "music": 2295.0, "anbn": 129.9},
    ("gnn", "dhfb"): {"alphabet": 4059.0, "music": 2688.7, "anbn": 132.0},
    ("glnn", "dhfb"): {"alphabet": 5883.9, "music": 3616.4, "anbn": 74.4},
    ("rnn", "qdruop"): {"alphabet": 3372.8, "music": 1349.5, "anbn": 89.5},
    ("rnn", "qdrbpm"): {"alphabet": 3623.9, "music": 1224.3, "anbn": 106.0},
    ("gnn", "ruop"): {"alphabet": 1759.0, "music": 1148.3, "anbn": 71.6},
    ("gnn", "rbpm"): {"alphabet": 2166.0, "music": 1596.0, "anbn": 115.4},
    ("glnn", "ruop"): {"alphabet": 1011.9, "music": 1055.9, "anbn": 29.7},
    ("glnn", "rbpm"): {"alphabet": 644.2, "music": 1055.9, "anbn": 30.0},
    ("batch-lstm", "plain"): {"alphabet": 20073.1, "music": 8796.1, "anbn": 139.8},
    ("batch-lstm", "dhfb"): {"alphabet": 11843.1, "music": 5590.9, "anbn": 101.7},
}
WHOLE_SIZES = {"alphabet": (16, 45, 128), "music": (16, 45, 128), "anbn": (4, 8, 16)}  # from the paper's sweep


def whole(args) -> str:
    """Every network row of Table 1 at three sizes per task (degree 3), under the networks' protocol; each
    cell is the best early-stopped regret over the sizes, beside the paper's."""
    rows = [tuple(r.split(":")) for r in args.rows] if args.rows else list(PAPER_ROWS)
    unknown = [r for r in rows if r not in PAPER_ROWS]
    if unknown:
        raise SystemExit(f"--rows: unknown {unknown}; rows are {', '.join(':'.join(r) for r in PAPER_ROWS)}")
    jobs, labels = [], []
    for (model, method) in rows:
        for task in args.tasks:
            seconds = PAPER_BUDGET[task] * args.budget_scale
            for units in WHOLE_SIZES[task]:
                jobs.append(["train", "--task", task, "--model", model, "--method", method, "--units", str(units),
                             "--degree", "3", "--seconds", str(seconds), "--evaluations", str(args.evaluations)]
                            + (["--patience", str(args.patience)] if args.patience else []))
                labels.append((model, method, task, units))
    t0 = time.time()

    def done(k, res):
        model, method, task, units = labels[k]
        print(f"[{time.time() - t0:7.0f} s] {task:8s} {model}/{method} N={units}: early-stopped "
              f"{res['stopped_validation_regret']:.1f} ({res['steps']} steps, {res['train_seconds']:.0f} s)", flush=True)

    results = run_all(jobs, args.jobs, done)
    if args.save:
        Path(args.save).write_text(json.dumps(results))
    best = winners(results)
    head = " | ".join(f"{task}: here (N) | paper" for task in args.tasks)
    lines = [f"| model, method | {head} |", "|---|" + "---:|---:|" * len(args.tasks)]
    for model, method in rows:
        paper = PAPER_ROWS[model, method]
        cells = " | ".join(f"{best[model, method, task]['stopped_validation_regret']:,.1f} "
                           f"({best[model, method, task]['experiment']['units']}) | {paper[task]:,.1f}"
                           for task in args.tasks)
        lines.append(f"| {model.upper()} {method} | {cells} |")
    budgets = ", ".join(f"{task} {PAPER_BUDGET[task] * args.budget_scale:.0f} s" for task in args.tasks)
    sizes = "; ".join(f"{task} {', '.join(map(str, WHOLE_SIZES[task]))}" for task in args.tasks)
    lines += ["", f"Validation regret (bits) at the checkpoint an independent stopping sequence picks, the best of "
                  f"the sizes N ({sizes}; degree 3) per cell, seed 0; CPU budget per run {budgets} "
                  f"({args.budget_scale:g} of the paper's), patience {args.patience} of {args.evaluations} "
                  "log-spaced checkpoints. Paper: seed 000's Table 1 (best over sizes 4 to 512 and two "
                  "degrees, the full budget)."]
    return "\n".join(lines)


def pick(curve: list[dict], seconds: float) -> dict:
    """The checkpoint the stopping sequence picks among those reached within ``seconds`` of training (2 %
    slack: a run's last checkpoint comes as its budget is spent, a step past it)."""
    return min((p for p in curve if p["seconds"] <= 1.02 * seconds), key=lambda p: p["stopping_regret"])


def why(args) -> str:
    """Each cell's winning size from saved ``--whole`` results, trained again for ``--budget-scale`` of the
    paper's budget without the patience rule; the stopping sequence's pick is read off the one run at each
    budget a ``--whole`` run could have had (1/20, 1/10, ...), so the table shows how much of each cell's
    distance to the paper more time closes, and whether the run was still improving when it ended."""
    earlier = winners([res for name in args.why for res in json.loads(Path(name).read_text())])
    skip = {tuple(s.split(":")) for s in args.skip or ()}
    rows = [tuple(r.split(":")) for r in args.rows] if args.rows else list(PAPER_ROWS)
    cells = [(m, me, t) for (m, me) in rows for t in args.tasks if (m, me, t) in earlier and (m, me, t) not in skip]
    jobs = []
    for model, method, task in cells:
        e = earlier[model, method, task]["experiment"]
        jobs.append(["train", "--task", task, "--model", model, "--method", method, "--units", str(e["units"]),
                     "--degree", str(e["degree"]), "--seconds", str(PAPER_BUDGET[task] * args.budget_scale),
                     "--evaluations", str(args.evaluations)]
                    + (["--patience", str(args.patience)] if args.patience else []))
    t0 = time.time()

    def done(k, res):
        model, method, task = cells[k]
        print(f"[{time.time() - t0:7.0f} s] {task:8s} {model}/{method} N={res['experiment']['units']}: early-stopped "
              f"{res['stopped_validation_regret']:.1f} ({res['steps']} steps, {res['train_seconds']:.0f} s)", flush=True)

    results = run_all(jobs, args.jobs, done)
    if args.save:
        Path(args.save).write_text(json.dumps(results))
    scales = [s for s in (0.05, 0.1, 0.2, 0.5, 1.0) if s <= args.budget_scale + 1e-9]
    head = " | ".join(f"{s:g} of the budget" for s in scales)
    lines = [f"| row | task | N | paper | earlier run (0.05, patience) | {head} | steps | best checkpoint at "
             "| distance to the paper closed |", "|---|---|---:|---:|---:|" + "---:|" * len(scales) + "---:|---:|---:|"]
    for (model, method, task), res in zip(cells, results):
        paper = PAPER_ROWS[model, method][task]
        before = earlier[model, method, task]
        at = [pick(res["validation_curve"], PAPER_BUDGET[task] * s)["regret"] for s in scales]
        end = pick(res["validation_curve"], float("inf"))
        last = res["validation_curve"][-1]
        where = "the last checkpoint" if end is last else f"{end['seconds']:.0f} s of {res['train_seconds']:.0f} s"
        closed = (at[0] - at[-1]) / (at[0] - paper) if at[0] > paper else float("nan")
        lines.append(f"| {model.upper()} {method} | {task} | {res['experiment']['units']} | {paper:,.1f} | "
                     f"{before['stopped_validation_regret']:,.1f}{' (stopped early)' if before['stopped_early'] else ''} | "
                     + " | ".join(f"{a:,.1f}" for a in at)
                     + f" | {res['steps']} | {where} | {100 * closed:.0f} % |")
    lines += ["", "Validation regret (bits) at the checkpoint the independent stopping sequence picks among those "
                  "reached within each budget, all from one run per cell (the size and degree that won the cell in "
                  f"the saved runs, seed 0; patience {args.patience or 'none'}, {args.evaluations} log-spaced "
                  "checkpoints; a column reads the checkpoints up to 2 % past its budget); \"distance closed\" is the fall from the first budget column to the last as a "
                  "share of the first column's distance to the paper. Paper: seed 000's Table 1."]
    return "\n".join(lines)


PAPER_HMM = {"alphabet": 10212.0, "music": 4818.1, "anbn": 125.7}  # seed 000, Table 1, "Hidden Markov model"
HMM_SIZES = {"alphabet": (4, 8, 16, 32, 64, 128, 256), "music": (4, 8, 16, 32, 64, 128, 256),
             "anbn": (4, 8, 16, 32, 64)}  # the paper's sweep (4 to 512 / 256 / 64 units), by factors of 2


def hmm(args) -> str:
    """Seed 000's third sanity check: an HMM by EM at each size of the sweep, under the protocol of the
    networks' rows (budget, checkpoints, early stopping on a third sequence); best over the sweep."""
    jobs, labels = [], []
    for task in args.tasks:
        seconds = PAPER_BUDGET[task] * args.budget_scale
        for states in HMM_SIZES[task]:
            jobs.append(["train", "--task", task, "--model", "hmm", "--units", str(states), "--seconds", str(seconds),
                         "--evaluations", str(args.evaluations)]
                        + (["--patience", str(args.patience)] if args.patience else []))
            labels.append((task, states, seconds))
    t0 = time.time()

    def done(k, res):
        task, states, _ = labels[k]
        print(f"[{time.time() - t0:7.0f} s] {task:8s} HMM {states} states: end {res['validation_regret']:.1f}, "
              f"early-stopped {res['stopped_validation_regret']:.1f}, best {res['best_validation_regret']:.1f} "
              f"({res['steps']} EM steps, {res['train_seconds']:.0f} s)", flush=True)

    results = run_all(jobs, args.jobs, done)
    if args.save:
        Path(args.save).write_text(json.dumps(results))
    lines = ["| task | CPU budget per size | early-stopped regret by number of states (bits) | best over the sweep, "
             "early-stopped (bits) | its best checkpoint (bits) | paper (bits) |", "|---|---:|---|---:|---:|---:|"]
    for task in args.tasks:
        rows = [(states, res) for (t, states, _), res in zip(labels, results) if t == task]
        if not rows:
            continue
        by_size = " / ".join(f"{states}: {res['stopped_validation_regret']:,.0f}" for states, res in rows)
        best_states, best = min(rows, key=lambda r: r[1]["stopped_validation_regret"])
        lines.append(f"| {task} | {PAPER_BUDGET[task] * args.budget_scale:.0f} s | {by_size} | "
                     f"**{best['stopped_validation_regret']:,.1f}** ({best_states} states) | "
                     f"{best['best_validation_regret']:,.1f} | {PAPER_HMM[task]:,.1f} |")
    lines += ["", "`seqd train --model hmm` (`seqd.core.hmm`: EM on a random graph of degree the alphabet's size, "
                  "seed 000's footnote 16) on the task's training sequence (random generators [0, 0]; validation "
                  "[0, 1], stopping sequence [0, 3]); validation regret with §4's regularisation, at the checkpoint "
                  "the stopping sequence picks. Paper: seed 000's Table 1."]
    return "\n".join(lines)


def xor(args) -> str:
    seeds = range(args.xor_first_seed, args.xor_first_seed + args.xor_seeds)
    jobs = [["train", "--task", "xor", "--length", str(args.xor_length), "--size", str(args.xor_lines),
             "--model", "glnn", "--method", args.xor_method, "--units", "10", "--degree", "10",
             "--steps", str(args.xor_steps), "--seed", str(seed), "--evaluations", "20"] for seed in seeds]
    t0 = time.time()

    def done(k, res):
        print(f"[{time.time() - t0:7.0f} s] xor seed {seeds[k]}: final error {100 * res['validation_error_rate']:.2f}% "
              f"best {100 * res['best_validation_error_rate']:.2f}% ({res['steps']} steps, {res['train_seconds']:.0f} s)",
              flush=True)

    results = run_all(jobs, args.jobs, done)
    if args.save:
        Path(args.save).write_text(json.dumps(results))
    lines = ["| seed | steps | CPU s | final error | final regret (bits) | best error along the run | first step below 1% |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    solved = 0
    for seed, res in zip(seeds, results):
        below = [p for p in res["validation_curve"] if p["error_rate"] < 0.01]
        solved += res["validation_error_rate"] < 0.01
        lines.append(f"| {seed} | {res['steps']} | {res['train_seconds']:.0f} | {100 * res['validation_error_rate']:.2f}% | "
                     f"{res['validation_regret']:.1f} | {100 * res['best_validation_error_rate']:.2f}% | "
                     f"{below[0]['step'] if below else '—'} |")
    lines.append(f"\n**{solved} of {args.xor_seeds} seeds end below 1% validation error** (line length T = "
                 f"{args.xor_length}, {args.xor_lines} training lines, GLNN N = 10 fully connected, {args.xor_method}).")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=list(DEFAULT_RUNS), choices=list(DEFAULT_RUNS))
    p.add_argument("--run", action="append",
                   help="TASK:MODEL:METHOD:UNITS:DEGREE[:SEED] (repeatable; replaces the defaults)")
    p.add_argument("--budget-scale", type=float, default=1.0, help="fraction of the paper's CPU budget (default 1)")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--evaluations", type=int, default=60, help="log-spaced validation checkpoints per run (default 60)")
    p.add_argument("--patience", type=int, default=12,
                   help="end a run after this many checkpoints without progress on its stopping sequence (0: never)")
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel, one core each (default 2)")
    p.add_argument("--xor", action="store_true", help="run distant XOR over 8 seeds instead")
    p.add_argument("--ctw", action="store_true",
                   help="run the sanity checks instead: CTW (a sweep of depths and pseudo-counts) and bzip2")
    p.add_argument("--hmm", action="store_true", help="run the HMM by EM over the paper's sizes instead")
    p.add_argument("--whole", action="store_true", help="run every network row of Table 1, three sizes per task")
    p.add_argument("--rows", nargs="+", metavar="MODEL:METHOD",
                   help="with --whole: only these rows (e.g. batch-lstm:plain batch-lstm:dhfb; default every row)")
    p.add_argument("--why", nargs="+", metavar="SAVED.json",
                   help="train each cell's winner in these saved --whole results again for --budget-scale of the "
                        "paper's budget and show what the extra time buys")
    p.add_argument("--skip", nargs="+", metavar="MODEL:METHOD:TASK", help="with --why: cells not to run again")
    p.add_argument("--xor-length", type=int, default=20)
    p.add_argument("--xor-seeds", type=int, default=8)
    p.add_argument("--xor-first-seed", type=int, default=0, help="the first of the --xor-seeds seeds (default 0)")
    p.add_argument("--xor-lines", type=int, default=10000)
    p.add_argument("--xor-steps", type=int, default=600)
    p.add_argument("--xor-method", default="rbpm")
    p.add_argument("--save", help="also write the raw JSON results here")
    p.add_argument("--section", help="name of the docs/benchmarks.md section to write (default from the mode)")
    p.add_argument("--no-write", action="store_true", help="print the table without touching docs/benchmarks.md")
    args = p.parse_args()
    body = (ctw(args) if args.ctw else xor(args) if args.xor else hmm(args) if args.hmm else whole(args) if args.whole
            else why(args) if args.why else table1(args))
    section = args.section or ("paper_ctw" if args.ctw else "paper_xor" if args.xor else "paper_hmm" if args.hmm else
                               "paper_whole" if args.whole else "paper_why" if args.why else
                               ("paper_table1" if args.budget_scale == 1.0 else "paper_table1_quick"))
    text = f"Command: `{command_line('paper_table1.py')}`  \nMachine: {machine()}\n\n{body}\n"
    report(section, text, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
