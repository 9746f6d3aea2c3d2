"""The online learner against its peers: real logs and seed 000's tasks, measured in one run.

    python bench/online.py logs    # every file of ../shared/data/logs: bits/byte beside the peer compressors
    python bench/online.py ablations [--jobs 2]  # each part of the byte-stream model changed in turn
    python bench/online.py scales     # the learned weight of each context source; the shared prior settings varied
    python bench/online.py where      # where the bits go by kind of byte, and each file's distance to paq8px
    python bench/online.py tasks   # seed 000's tasks streamed once (training, then validation): regret vs PPMd
    python bench/online.py cost    # where the time goes per symbol, and cost vs stream length
    python bench/online.py lifelong  # seed 000's GLNN over the nine logs back to back, three times, vs fresh

Results go to docs/benchmarks.md (``--no-write`` to only print).  One
default configuration serves every file: ``OnlineConfig.bytes_default()``
for the logs, ``OnlineConfig()`` (seed 000's GLNN alone) for the tasks.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import PEERS, held_out_files, kt_code_length_bits, log_files, table, weighted_mean  # noqa: E402
from common import ROOT, command_line, machine, report  # noqa: E402

import seqd  # noqa: E402
from seqd.core import tasks  # noqa: E402
from seqd.core.online.versions import PRESET, PRESETS  # noqa: E402  (the GLNN byte model these ablations study)
from seqd.core.limits import check_settings  # noqa: E402
from seqd.core.online import OnlineConfig, OnlineLearner  # noqa: E402
from seqd.core.online.sources import COLUMN, MATCH, ORDER, WORD  # noqa: E402

BYTES = OnlineConfig.bytes_default()

LSTM_COMPRESS = {  # ../shared/ANCHORS.md, bits per byte and bytes/s (measured there on this machine type)
    "Apache_2k.log": 0.383, "HDFS_2k.log": 1.114, "HealthApp_2k.log": 0.740, "Linux_2k.log": 0.640,
    "OpenSSH_2k.log": 0.486, "Proxifier_2k.log": 0.641, "Spark_2k.log": 0.521, "Zookeeper_2k.log": 0.585,
    "dpkg.log": 0.640,
}


def learn_file(data: bytes, config: OnlineConfig) -> tuple[float, float]:
    """(total bits, CPU seconds) of one prequential pass over ``data``."""
    learner = OnlineLearner(config)
    t0 = time.process_time()
    bits = learner.learn(data)
    return float(bits.sum()), time.process_time() - t0


def _seqd_rows(files, config: OnlineConfig, label: str) -> list[dict]:
    """Per file: bits per byte of the prequential pass under ``config`` (key ``label``) and bytes/s."""
    learn_file(files[0].read_bytes()[:4096], config)  # compile outside the timings
    rows = []
    for path in files:
        data = path.read_bytes()
        bits, cpu = learn_file(data, config)
        print(f"{label} {path.name}: {bits / len(data):.4f} bits/byte, {len(data) / cpu:.0f} bytes/s", flush=True)
        rows.append({"name": path.name, "bytes": len(data), label: bits / len(data), "bits": bits, "cpu": cpu})
    return rows


def _speed(rows) -> float:
    return sum(r["bytes"] for r in rows) / sum(r["cpu"] for r in rows)


def logs(args) -> str:
    files = log_files()
    if not files:
        return "No logs: ../shared/data/logs is absent here."
    rows = _seqd_rows(files, BYTES, "seqd")
    for row, peers in zip(rows, table(files)):
        row.update({p: peers[p] for p in PEERS}, lstm=LSTM_COMPRESS.get(row["name"]))
    cols = ["seqd", *PEERS, "lstm"]
    cell = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    lines = ["| file | bytes | **seqd** | " + " | ".join(PEERS) + " | lstm-compress (ANCHORS) | seqd bytes/s |",
             "|---|---:|" + "---:|" * (len(cols) + 1)]
    for r in rows:
        lines.append(f"| {r['name']} | {r['bytes']} | **{r['seqd']:.3f}** | "
                     + " | ".join(cell(r[c]) for c in cols[1:]) + f" | {r['bytes'] / r['cpu']:.0f} |")
    lines.append(f"| **mean (weighted by size)** | {sum(r['bytes'] for r in rows)} | "
                 f"**{weighted_mean(rows, 'seqd'):.3f}** | " + " | ".join(cell(weighted_mean(rows, c)) for c in cols[1:])
                 + f" | {_speed(rows):.0f} |")
    lines.append("")
    for peer in ("xz-9e", "ppmd-o16", "lstm"):
        if any(r[peer] is None for r in rows):
            continue
        better = [r["name"] for r in rows if r["seqd"] < r[peer]]
        lines.append(f"- below {peer} on {len(better)} of {len(rows)} files"
                     + ("" if len(better) == len(rows) else f" (not on {', '.join(sorted({r['name'] for r in rows} - set(better)))})"))
    lines.append(f"- slowest file: {min(r['bytes'] / r['cpu'] for r in rows):.0f} bytes/s")
    lines.append("")
    lines.append("Bits per byte are prequential code lengths (predict, then learn; no coder); peers are compressed "
                 "sizes. Logs: Loghub, https://github.com/logpai/loghub, and a Debian dpkg log.")
    return "\n".join(lines)


ABLATIONS = [  # (label, configuration): one part of the default changed at a time
    ("default: 4 recurrent units, all context units, the mixer, the probability maps", BYTES),
    # the probability maps (maps.py)
    ("without the probability maps", replace(BYTES, probability_maps=False)),
    # the mixer (mixer.py)
    ("without the mixer: per-symbol context weights alone",
     replace(BYTES, selected_weights=False)),
    ("the mixer, per-symbol weights held at their initial value (context_prior=2^20)",
     replace(BYTES, context_prior=2.0 ** 20)),
    ("the mixer by one full outer-product metric block per k (selected_step='block')",
     replace(BYTES, selected_step="block")),
    *[(f"the mixer by a plain gradient step, rate {rate:g}", replace(BYTES, selected_step="gradient", selected_rate=rate))
      for rate in (0.001, 0.003, 0.01, 0.03)],
    ("without the field-selected weights", replace(BYTES, field_selected_weights=False)),
    ("without the order-2-selected weights", replace(BYTES, order2_selected_weights=False)),
    ("without the unit-selected weights", replace(BYTES, unit_selected_weights=False)),
    ("the field-selected weights' 32 rows of seqd 0.5-0.7 (no field number, positions 0-2)",
     replace(BYTES, field_selecting_fields=1, field_selecting_positions=4)),
    # the recurrent units
    ("without the recurrent units (units=0, and so the unit-selected weights)", replace(BYTES, units=0)),
    ("recurrent units alone (4 units, no context units, no maps)",
     replace(BYTES, context_orders=(), column_context=False, field_column_context=False, word_context=False,
             indirect_context=False, number_context=False, match_min=0, selected_weights=False,
             probability_maps=False)),
    ("seed 000's GLNN alone, 32 units (OnlineConfig())", OnlineConfig()),
    # the context sources, one at a time
    *[(f"without order {k}", replace(BYTES, context_orders=tuple(o for o in BYTES.context_orders if o != k)))
      for k in BYTES.context_orders],
    ("with order 8 too (orders of preset bytes-3)",
     replace(BYTES, context_orders=tuple(PRESETS["bytes-3"]["context_orders"]))),
    ("without the order-k chain", replace(BYTES, context_orders=())),
    ("without the column source", replace(BYTES, column_context=False)),
    ("without the field column source (and so the field-selected weights)",
     replace(BYTES, field_column_context=False)),
    ("without the word source", replace(BYTES, word_context=False)),
    ("without the indirect source", replace(BYTES, indirect_context=False)),
    ("without the match model", replace(BYTES, match_min=0)),
    ("without the number source", replace(BYTES, number_context=False)),
    ("the model of preset bytes-8 (seqd 0.8)", check_settings(dict(PRESETS["bytes-8"]))),
    ("the model of preset bytes-6 (seqd 0.6)", check_settings(dict(PRESETS["bytes-6"]))),
    ("the model of preset bytes-3 (seqd 0.3)", check_settings(dict(PRESETS["bytes-3"]))),
]


def _config_table(files, configs) -> list[str]:
    """A row of bits per byte per (label, configuration), a column per file, the weighted mean and the speed."""
    short = [f.name.split("_")[0].removesuffix(".log") for f in files]
    lines = ["| model | " + " | ".join(short) + " | mean | bytes/s |", "|---|" + "---:|" * (len(files) + 2)]
    for label, config in configs:
        rows = _seqd_rows(files, config, label)
        lines.append(f"| {label} | " + " | ".join(f"{r[label]:.3f}" for r in rows)
                     + f" | **{weighted_mean(rows, label):.3f}** | {_speed(rows):.0f} |")
    return lines


def ablations(args) -> str:
    from concurrent.futures import ProcessPoolExecutor

    files = log_files()
    if not files:
        return "No logs: ../shared/data/logs is absent here."
    held = held_out_files()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        runs = [pool.submit(_seqd_rows, files + held, config, label) for label, config in ABLATIONS]
        results = [run.result() for run in runs]
    short = [f.name.split("_")[0].removesuffix(".log") for f in files]
    mean = lambda part: sum(r["bits"] for r in part) / sum(r["bytes"] for r in part)  # noqa: E731
    base, base_held = mean(results[0][:len(files)]), mean(results[0][len(files):]) if held else None
    lines = ["| model | " + " | ".join(short) + " | mean | vs default | held out | vs default | bytes/s |",
             "|---|" + "---:|" * (len(files) + 5)]
    for (label, _), out in zip(ABLATIONS, results):
        public, own = out[:len(files)], out[len(files):]
        m = mean(public)
        lines.append(f"| {label} | " + " | ".join(f"{r[label]:.3f}" for r in public)
                     + f" | **{m:.4f}** | {m - base:+.4f} | "
                     + (f"{mean(own):.4f} | {mean(own) - base_held:+.4f} |" if held else "— | — |")
                     + f" {_speed(public):.0f} |")
    lines.append("")
    lines.append("Bits per byte, prequential, one pass per file; means weighted by file size. Each row changes one "
                 "thing in `OnlineConfig.bytes_default()`. Held out: "
                 + (", ".join(str(p) for p in held) + f" ({sum(p.stat().st_size for p in held)} bytes), "
                    "logs of the benchmark machine that chose nothing." if held else "none on this machine.")
                 + f" Speeds are CPU time per row, {args.jobs} row(s) at a time on this machine.")
    return "\n".join(lines)


PAQ8PX = {  # ../shared/ANCHORS.md: paq8px v216 -8, bits per byte
    "Apache_2k.log": 0.117, "HDFS_2k.log": 0.719, "HealthApp_2k.log": 0.203, "Linux_2k.log": 0.195,
    "OpenSSH_2k.log": 0.111, "Proxifier_2k.log": 0.282, "Spark_2k.log": 0.142, "Zookeeper_2k.log": 0.202,
    "dpkg.log": 0.142,
}
BYTE_CLASSES = (("digits", lambda x: (x >= 48) & (x <= 57)),
                ("letters", lambda x: ((x >= 65) & (x <= 90)) | ((x >= 97) & (x <= 122))),
                ("spaces and newlines", lambda x: (x == 32) | (x == 9) | (x == 10)))
LINE_HEAD = 26  # bytes at the start of a line that hold the timestamp on each of the nine logs


def line_positions(x: np.ndarray) -> np.ndarray:
    """Each byte's position in its line (0 for the first byte after a newline)."""
    starts = np.zeros(len(x), dtype=np.int64)
    newlines = np.flatnonzero(x == 10) + 1
    starts[newlines[newlines < len(x)]] = newlines[newlines < len(x)]
    return np.arange(len(x)) - np.maximum.accumulate(starts)


def where(args) -> str:
    """Where the default's bits go, by kind of byte, and how far each file is from paq8px."""
    files = log_files()
    if not files:
        return "No logs: ../shared/data/logs is absent here."
    names = [name for name, _ in BYTE_CLASSES] + ["other (punctuation)"]
    lines = ["| file | bits/byte | paq8px −8 (ANCHORS) | ratio | "
             + " | ".join(f"{n}: bytes / bits" for n in names) + " |", "|---|---:|---:|---:|" + "---:|" * len(names)]
    digits = ["| file | digits in a line's first 26 bytes: bytes / bits / bits each "
              "| digits after them: bytes / bits / bits each |", "|---|---:|---:|"]
    for path in files:
        x = np.frombuffer(path.read_bytes(), dtype=np.uint8)
        bits = OnlineLearner(BYTES).learn(x)
        masks = [test(x) for _, test in BYTE_CLASSES]
        masks.append(~np.logical_or.reduce(masks))
        own, paq = bits.sum() / len(x), PAQ8PX.get(path.name)
        lines.append(f"| {path.name} | {own:.3f} | " + (f"{paq:.3f} | {own / paq:.2f}× | " if paq else "— | — | ")
                     + " | ".join(f"{m.mean():.0%} / {bits[m].sum() / bits.sum():.0%}" for m in masks) + " |")
        head = line_positions(x) < LINE_HEAD
        cells = [masks[0] & head, masks[0] & ~head]
        digits.append(f"| {path.name} | " + " | ".join(
            f"{m.mean():.0%} / {bits[m].sum() / bits.sum():.0%} / {bits[m].sum() / max(m.sum(), 1):.2f}"
            for m in cells) + " |")
    lines += ["", "Each cell after the ratio: the share of the file's bytes of that kind, and the share of its "
              "prequential bits they cost.", "",
              "The digits, by where they are in the line: the first 26 bytes hold each file's timestamp (and, on "
              "HDFS, a thread number after it); the rest is the message.", "", *digits, "",
              "Each cell: the share of the file's bytes, the share of its bits, and bits per digit."]
    return "\n".join(lines)


PRIOR_SETTINGS = [  # the only settings the context weights share: their initial value and their prior mass
    ("default: initial weight 0.3, prior mass 10", BYTES),
    ("initial weight 0.1", replace(BYTES, context_weight=0.1)),
    ("initial weight 1.0", replace(BYTES, context_weight=1.0)),
    ("prior mass 1", replace(BYTES, context_prior=1.0)),
    ("prior mass 100", replace(BYTES, context_prior=100.0)),
]


def scales(args) -> str:
    """What the metric learns per source, and how little the shared settings of the context weights matter."""
    files = log_files()
    if not files:
        return "No logs: ../shared/data/logs is absent here."
    names = [f"order {k}" if kind == ORDER else {COLUMN: "column", WORD: "word", MATCH: "match"}[kind]
             for kind, k in BYTES.sources]
    short = [f.name.split("_")[0].removesuffix(".log") for f in files]
    lines = ["Learned context weights c_sy after one pass: the median over the symbols seen, per source.", "",
             "| source | " + " | ".join(short) + " |", "|---|" + "---:|" * len(files)]
    medians = []
    for path in files:
        learner = OnlineLearner(BYTES)
        learner.learn(path.read_bytes())
        seen = int(learner.stats["alphabet_size"])
        medians.append(np.median(learner.state.ctx_w[:, 1:seen + 1], axis=1))
    for s, name in enumerate(names):
        lines.append(f"| {name} | " + " | ".join(f"{m[s]:.2f}" for m in medians) + " |")
    lines += ["", "Bits per byte when the shared settings of the context weights change by 10-30×:", ""]
    lines += _config_table(files, PRIOR_SETTINGS)
    return "\n".join(lines)


def tasks_table(args) -> str:
    import pyppmd

    config = OnlineConfig()
    lines = ["| task | training stream | validation symbols | true model (bits) | seqd online regret (bits) "
             "| PPMd o16 regret (bits) | XOR error |", "|---|---|---:|---:|---:|---:|---:|"]
    runs = [("alphabet", None, {}), ("music", None, {}), ("anbn", None, {}), ("anbn", 200, {}),
            ("xor", None, {"length": 20}), ("xor", 20000, {"length": 20}), ("xor", 20000, {"length": 50})]
    for task, train_size, opts in runs:
        train = tasks.generate(task, np.random.default_rng([0, 0]), train_size, **opts)
        valid = tasks.generate(task, np.random.default_rng([0, 1]), None, **opts)
        bits, regret = _streamed(config, train, valid)
        a, b = train.text.encode(), valid.text.encode()
        ppmd = 8 * (len(pyppmd.compress(a + b, max_order=16, mem_size=256 << 20))
                    - len(pyppmd.compress(a, max_order=16, mem_size=256 << 20)))
        err, ppmd_cell = "", f"{ppmd + valid.true_log2_likelihood:.1f}"
        if task == "xor":
            mask = valid.predict_mask != 0
            err = f"{100 * np.mean(bits[mask] >= 1.0):.1f}%"
            ppmd_cell = "—"
        what = f"{len(train)} symbols" + ("" if train_size is None else f" ({train_size} {'blocks' if task == 'anbn' else 'lines'})")
        print(f"{task} {what}: regret {regret:.1f}", flush=True)
        label = f"{task} T={opts['length']}" if task == "xor" else task
        lines.append(f"| {label} | {what} | {len(valid)} | {-valid.true_log2_likelihood:.1f} | "
                     f"{regret:.1f} | {ppmd_cell} | {err} |")
    lines.append("")
    lines.append("One learner streams the training sequence once and then the validation sequence; the validation "
                 "part's prequential code length minus the true model's is the regret (seed 000's protocol for its "
                 "CTW sanity check). PPMd: compressed size of training + validation minus training alone. "
                 "For XOR only the bit after '=' is scored (chi_t of eq. 16), which a compressor cannot isolate; "
                 "the error column is the fraction of those bits given probability <= 1/2.")
    lines += ["", *_anbn_seeds_table(config)]
    return "\n".join(lines)


def _streamed(config: OnlineConfig, train, valid) -> tuple[np.ndarray, float]:
    """One learner (``config`` over the task's alphabet) streams ``train`` then ``valid``: the validation
    sequence's code lengths, and its regret (bits on the scored positions minus the true model's)."""
    learner = OnlineLearner(replace(config, alphabet_cap=len(train.alphabet)))
    learner.learn(train.symbols)
    bits = learner.learn(valid.symbols)
    return bits, float((bits * valid.predict_mask).sum()) + valid.true_log2_likelihood


ANBN_SEEDS = range(5)


def _anbn_seeds_table(config: OnlineConfig) -> list[str]:
    """The aⁿbⁿ regret of the same protocol with the learner's ``seed`` (its initial reading rates, eq. 32)
    varied: one seed's figure says little when the learning is unstable."""
    valid = tasks.generate("anbn", np.random.default_rng([0, 1]), None)
    lines = ["| training blocks | " + " | ".join(f"seed {s}" for s in ANBN_SEEDS) + " |",
             "|---:|" + "---:|" * len(ANBN_SEEDS)]
    for blocks in (10, 200):
        train = tasks.generate("anbn", np.random.default_rng([0, 0]), blocks)
        cells = []
        for seed in ANBN_SEEDS:
            cells.append(_streamed(replace(config, seed=seed), train, valid)[1])
            print(f"anbn {blocks} blocks, seed {seed}: regret {cells[-1]:.1f}", flush=True)
        lines.append(f"| {blocks} | " + " | ".join(f"{c:,.0f}" for c in cells) + " |")
    lines += ["", "aⁿbⁿ validation regret (bits) as above, with the learner's `seed` (the draw of its initial "
                  "reading rates, eq. 32) varied; seed 0 is the default, the table above."]
    return lines


def _drivers():
    """Numba loops that run parts of the learner alone, for the cost breakdown."""
    from seqd.core.jit import kernel
    from seqd.core.kernels.activation import TANH
    from seqd.core.kernels.forward import evolve_into, softmax_into
    from seqd.core.kernels.network import Network
    from seqd.core.online.config import H
    from seqd.core.online.state import ACTIVE
    from seqd.core.online.steps import writing_step

    @kernel
    def predict_and_evolve(st, hyper, flags, symbols, with_writing):
        width = st.counts[ACTIVE] + 1
        net = Network(st.inputs, st.tau, st.tau[0, :0, 0:0], hyper[H.leak], True, TANH, st.numerics)  # OnlineConfig() is tanh
        for t in range(symbols.shape[0]):
            softmax_into(st.a[0], st.w[:, :width], st.pi[0, :width], st.numerics)
            code = st.code_of[symbols[t]]
            if with_writing:
                writing_step(st, hyper, flags, 0, code, 0, width)
            evolve_into(net, st.V[0], st.a[0], code, st.V[1], st.a[1])
            for i in range(st.V.shape[1]):
                st.V[0, i] = st.V[1, i]
                st.a[0, i] = st.a[1, i]

    return predict_and_evolve


def _sources_driver():
    """A Numba loop that runs the context sources alone: find and read each context, then count the symbol
    (``sources.py``; the mixer's row choice and vote are not run)."""
    from seqd.core.jit import kernel
    from seqd.core.online.config import F
    from seqd.core.online.growth import grow_tables
    from seqd.core.online.sources import POS, activities, clear_activities, locate, observe, sources_of

    @kernel
    def sources_only(st, flags, symbols):
        src = sources_of(st)
        for t in range(symbols.shape[0]):
            locate(src, flags[F.context_bits])
            activities(src, st.code_of, st.numerics, flags[F.alphabet_cap], st.feat, st.feat_nz, st.sel_row)
            clear_activities(st.ctx_int, st.feat, st.feat_nz)
            observe(src, symbols[t], flags[F.count_limit], flags[F.match_min])
            if st.grown.shape[0] > 0:  # as learn_step does: a table that is half full doubles
                grow_tables(src, st.ctx_int[POS], flags[F.context_bits], flags[F.match_bits], flags[F.match_min])

    return sources_only


def _trained(config: OnlineConfig, data: bytes) -> OnlineLearner:
    """A learner that has seen ``data`` once: every symbol of it active, its tables filled."""
    learner = OnlineLearner(config)
    learner.learn(data)
    return learner


def byte_model_cost(data: bytes, name: str) -> list[str]:
    """Where the byte model's time goes: its context sources, its recurrent units, and the rest (the mixing)."""
    x = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    n = len(x)
    trained = _trained(BYTES, data)
    without_units = _trained(replace(BYTES, units=0), data)
    sources_only = _sources_driver()
    warm = OnlineLearner.from_bytes(trained.to_bytes())
    sources_only(warm.state, warm._flags, x[:10])  # compiled before it is timed
    total = _cpu(OnlineLearner.from_bytes(trained.to_bytes()).learn, data)
    no_units = _cpu(OnlineLearner.from_bytes(without_units.to_bytes()).learn, data)
    st = OnlineLearner.from_bytes(trained.to_bytes())
    sources = _cpu(sources_only, st.state, st._flags, x)
    lines = [f"The byte model (`OnlineConfig.bytes_default()`) on {name}, a second pass as above:", ""]
    parts = [
        ("context sources: find each context, read its counts, count the symbol (`sources.py`; since seqd 0.19's "
         "house step without the mixer's rows and vote, which count in the mixing)", sources),
        ("the mixing: rows and votes, softmax, the context and selected weights' steps, the units' writing "
         "weights (`mixer.py`, `writing.py`)", no_units - sources),
        (f"the {BYTES.units} recurrent units: state evolution and the window step (`window.py`; the model "
         "with units=0 subtracted)", total - no_units),
    ]
    return lines + _time_table(parts, total, n)


def _time_table(parts, total: float, n: int) -> list[str]:
    """Rows of (label, CPU seconds) over ``n`` bytes as µs per byte and share of ``total``, then the total."""
    us = lambda s: 1e6 * s / n  # noqa: E731
    lines = ["| part | µs per byte | share |", "|---|---:|---:|"]
    lines += [f"| {label} | {us(seconds):.2f} | {100 * seconds / total:.0f}% |" for label, seconds in parts]
    lines.append(f"| **total** | **{us(total):.2f}** ({n / total:.0f} bytes/s) | 100% |")
    return lines


def _cpu(fn, *args):
    t0 = time.process_time()
    fn(*args)
    return time.process_time() - t0


def cost(args) -> str:
    from seqd.core.online.state import ACTIVE, OnlineState
    from seqd.core.online.window import window_gradient

    files = log_files()
    data = files[0].read_bytes() if files else bytes(np.random.default_rng(0).integers(32, 96, 200_000, dtype=np.uint8))
    name = files[0].name if files else "random bytes"
    config = OnlineConfig()
    hyper, flags = config.hyper(), config.flags()
    x = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    n = len(x)
    trained = _trained(config, data)  # steady state: the whole alphabet is active
    copy = lambda: OnlineState(*(np.array(a, copy=True) for a in trained.state))  # noqa: E731
    run = _drivers()
    run(copy(), hyper, flags, x[:10], True)
    run(copy(), hyper, flags, x[:10], False)
    total = _cpu(OnlineLearner.from_bytes(trained.to_bytes()).learn, data)
    forward = _cpu(run, copy(), hyper, flags, x, False)
    writing = _cpu(run, copy(), hyper, flags, x, True) - forward
    st = copy()
    width = int(st.counts[ACTIVE]) + 1
    reps = n // (config.window + 1)
    gradient = _cpu(lambda: [window_gradient(st, hyper, flags, width) for _ in range(reps)])
    lines = [f"Cost per byte on {name} ({n} bytes, a second pass of a learner that has seen it once), "
             "one core, CPU time:", ""]
    parts = [
        ("prediction and state evolution (eqs. 6, 13)", forward),
        ("writing-weight update (discounted QDH, eqs. 17-21)", writing),
        ("window BPTT and RBPM modulus, gradients, Sherman-Morrison metric updates (eqs. 22-26)", gradient),
        ("window step: block solves, replay, accept/reject (eqs. 27-28, seed 000 §2 rule)", total - forward - writing - gradient),
    ]
    lines += _time_table(parts, total, n)
    lines += ["", *byte_model_cost(data, name)]
    # cost and memory against stream length: one learner over the logs, back to back, several times
    stream = b"".join(f.read_bytes() for f in files) if files else data * 8
    stream = (stream * 3)[: 6 << 20]
    learner = OnlineLearner(config)
    seg = 1 << 20
    lines += ["", f"One learner over a {len(stream) >> 20} MiB stream (the logs back to back, repeated): "
              "cost, code length and state size per MiB.", "",
              "| MiB of stream | bytes/s | bits/byte | rejected windows so far | learner state (bytes) |",
              "|---:|---:|---:|---:|---:|"]
    for k in range(0, len(stream), seg):
        t0 = time.process_time()
        bits = learner.learn(stream[k:k + seg])
        dt = time.process_time() - t0
        lines.append(f"| {k // seg + 1} | {len(bits) / dt:.0f} | {bits.mean():.3f} | "
                     f"{learner.stats['rejected_windows']} | {learner.state_bytes} |")
        print(lines[-1], flush=True)
    return "\n".join(lines)


CURVE_PEERS = ("xz-9e", "ppmd-o16")
CURVE_IMAGE = "docs/images/learning-curves-logs.png"


def curves(args) -> str:
    """The byte model's learning curve on each log, beside the peers' figures for that file, as a picture."""
    from seqd.cli import _curve

    files = log_files()
    drawn, per_file = [], {}
    for path, peers in zip(files, table(files, peers=CURVE_PEERS)):
        data = path.read_bytes()
        curve = _curve.Curve.for_size(path.name, len(data))
        curve.add(OnlineLearner(BYTES).learn(data))
        drawn.append(curve.finish())
        per_file[path.name] = [(p, peers[p]) for p in CURVE_PEERS if peers.get(p) is not None]
        if path.name in PAQ8PX:
            per_file[path.name].append(("paq8px -8 (ANCHORS)", PAQ8PX[path.name]))
        print(f"{path.name}: {curve.points()[-1][2]:.4f}", flush=True)
    image = ROOT / CURVE_IMAGE
    image.parent.mkdir(exist_ok=True)
    fig = _curve.figure(drawn, [], f"seqd {seqd.__version__}, preset {PRESET}: bits per byte along each log",
                        per_file=per_file)
    if not args.no_write:
        fig.savefig(image, dpi=90)
    return (f"![Learning curves on the nine logs]({Path(CURVE_IMAGE).relative_to('docs')})\n\n"
            "The byte model's bits per byte along each log: over a sliding stretch of a fiftieth of the file (blue) "
            "and so far (black), whose last value is the file's figure in the table above; the dashed lines are "
            "what xz −9e and PPMd order 16 (measured in this run) and paq8px −8 (`../shared/ANCHORS.md`) take for "
            "the whole file.")


LIFELONG_PASSES = 3
SATURATED = 3.0  # a unit whose potential passed +-3 in the window (|tanh| > 0.995) has next to no slope


def _lifelong_row(label: str, bits: list[float], sizes: list[int], extra: list[str]) -> str:
    mean = sum(bits) / sum(sizes)
    return "| " + " | ".join([label, f"{mean:.4f}", *(f"{b / n:.3f}" for b, n in zip(bits, sizes)), *extra]) + " |"


def lifelong(args) -> str:
    """One pure GLNN (``OnlineConfig()``) streams the nine logs back to back, three times over, beside a fresh
    learner for each file: whether a learner that keeps learning gets cheaper on content it has seen (the
    long-memory issue's lifelong target: the third pass at least 20 % cheaper than the first)."""
    files = log_files()
    sizes = [f.stat().st_size for f in files]
    names = [f.name.split("_")[0].split(".")[0] for f in files]
    lines = ["| pass | bits/byte | " + " | ".join(names) + " | rejected windows | max \\|τ\\| | mean \\|τ\\| "
             "| units saturated |", "|---|---:|" + "---:|" * len(files) + "---:|---:|---:|---:|"]
    learner = OnlineLearner(OnlineConfig())
    for n in range(1, LIFELONG_PASSES + 1):
        bits = [float(learner.learn(f.read_bytes()).sum()) for f in files]
        st, tau, V = learner.stats, learner.state.tau, learner.state.V
        saturated = int((np.abs(V[:, 1:]) > SATURATED).any(axis=0).sum())
        lines.append(_lifelong_row(str(n), bits, sizes, [f"{st['rejected_windows']:,} of {st['windows']:,}",
                                                         f"{np.abs(tau).max():.1f}", f"{np.abs(tau).mean():.3f}",
                                                         f"{saturated} of {V.shape[1] - 1}"]))
        print(lines[-1], flush=True)
    fresh, cpu = [], []
    for f in files:
        learner, data = OnlineLearner(OnlineConfig()), f.read_bytes()
        t0 = time.process_time()
        fresh.append(float(learner.learn(data).sum()))
        cpu.append(time.process_time() - t0)
    lines.append(_lifelong_row("fresh, one per file", fresh, sizes, ["", "", "", ""]))
    lines.append("| fresh, one per file: bytes/s | " + f"{sum(sizes) / sum(cpu):,.0f} | "
                 + " | ".join(f"{n / t:,.0f}" for n, t in zip(sizes, cpu)) + " |  |  |  |  |")
    kt = [kt_code_length_bits(f.read_bytes(), 3) for f in files]
    lines.append(_lifelong_row("kt-o3, one per file", kt, sizes, ["", "", "", ""]))
    lines += ["", f"Bits per byte of each pass of one learner over the nine logs back to back "
                  f"({sum(sizes):,} bytes a pass), of a fresh learner for each file, and of the adaptive order-3 "
                  "count model (kt-o3, `bench/baselines.py`) on each file; after each pass, the "
                  "windows whose step was rejected so far, the transition weights' largest and mean magnitude, "
                  f"and the units whose potential passed ±{SATURATED:g} in the last window (|tanh| > 0.995). "
                  "The fresh learners' speed is bytes over CPU seconds of their one pass, on one core."]
    held = held_out_files()
    if held:
        data = [f.read_bytes() for f in held]
        glnn = [float(OnlineLearner(OnlineConfig()).learn(d).sum()) for d in data]
        kt = [kt_code_length_bits(d, 3) for d in data]
        n = sum(len(d) for d in data)
        lines += ["", "The held-out logs (`bench/baselines.py`; they chose nothing), a fresh learner for each file:",
                  "", "| model | bits/byte | " + " | ".join(str(f) for f in held) + " |",
                  "|---|---:|" + "---:|" * len(held)]
        for label, bits in (("seed 000's GLNN, `OnlineConfig()`", glnn), ("kt-o3", kt)):
            lines.append(f"| {label} | {sum(bits) / n:.4f} | "
                         + " | ".join(f"{b / len(d):.3f}" for b, d in zip(bits, data)) + " |")
        print("\n".join(lines[-2:]), flush=True)
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("logs", "ablations", "scales", "where", "tasks", "cost", "curves", "lifelong"))
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--jobs", type=int, default=1, help="ablation rows run at once (one core each)")
    args = p.parse_args()
    body = {"logs": logs, "ablations": ablations, "scales": scales, "where": where, "tasks": tasks_table,
            "cost": cost, "curves": curves, "lifelong": lifelong}[args.what](args)
    config = OnlineConfig() if args.what in ("tasks", "cost", "lifelong") else BYTES
    text = f"Command: `{command_line('online.py')}`  \nMachine: {machine()}  \nConfiguration: `{config}`\n\n{body}\n"
    report(f"online_{args.what}", text, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
