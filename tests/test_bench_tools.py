"""The benchmark tools that read rather than measure: the summary's table reader, the profile's symbol names, and
the two-preset table of the logs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load(name: str):
    """A bench script as a module of its own name (bench/profile.py must not stand for the standard library's)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernel_profile = _load("profile")
summary = _load("summary")
presets_on_logs = _load("presets_on_logs")


def test_tables_read_bold_cells_and_number_repeated_headers():
    block = "text\n\n| model | **a** | paper | b | paper |\n|---|---:|---:|---:|---:|\n| x | **1.5** | 2 | 3 | 4 |\n"
    (rows,) = summary.tables(block)
    assert rows == [{"model": "x", "a": "1.5", "paper": "2", "b": "3", "paper 2": "4"}]


def test_a_missing_section_is_named_missing_not_guessed():
    text = "# Benchmarks\n\n<!-- BEGIN summary -->\n<!-- END summary -->\n"
    out = summary.summary(text)
    for name in ("online_logs", "speed_vs_0_16", "compress_logs", "paper_whole", "cluster"):
        assert f"no `{name}` section yet" in out


def test_the_summary_quotes_the_sections_it_reads():
    text = ("<!-- BEGIN speed_vs_0_16 -->\n| command | new / 0.16 (median) |\n|---|---:|\n| `seqd eval X` | 0.733 |\n"
            "seqd 0.19's compress takes 29.9 times xz -9e's CPU time here.\n<!-- END speed_vs_0_16 -->\n")
    out = summary.summary(text)
    assert "`seqd eval X` 0.733" in out and "29.9 times `xz -9e`" in out


def test_kernel_names_come_from_numbas_mangled_symbols():
    symbol = ("_ZN4seqd4core6online7sources10activitiesB3v38B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMbCQQPKkLTj8QGEPTzVgbZo"
              "AE5ArrayIx")
    assert kernel_profile._kernel_name(symbol) == "online.sources.activities"
    assert kernel_profile._kernel_name("_PyEval_EvalFrameDefault") is None


def test_two_presets_on_the_logs_are_weighted_by_size_per_group(monkeypatch, tmp_path):
    public, held = [tmp_path / "a.log", tmp_path / "b.log"], [tmp_path / "c.log"]
    sizes = {"a.log": 100, "b.log": 300, "c.log": 50}
    bits = {"glnn": {"a.log": 100.0, "b.log": 600.0, "c.log": 50.0},
            "rehearsal": {"a.log": 50.0, "b.log": 600.0, "c.log": 100.0}}

    def fake_eval(args):
        preset = args[args.index("--preset") + 1]
        return {"files": [{"file": f, "bytes": sizes[Path(f).name], "bits": bits[preset][Path(f).name],
                           "bytes_per_second": 1000.0} for f in args[3:]]}

    monkeypatch.setattr(presets_on_logs, "log_files", lambda: public)
    monkeypatch.setattr(presets_on_logs, "held_out_files", lambda: held)
    monkeypatch.setattr(presets_on_logs, "seqd_json", fake_eval)
    text = presets_on_logs.table("glnn", "rehearsal")
    assert "| a.log | 100 | 1.00000 | 0.50000 | -0.50000 | 1,000 |" in text
    # public: (100 + 600) / 400 = 1.75 against (50 + 600) / 400 = 1.625; held out: 1 against 2
    assert "| **public logs, size-weighted** | 400 | **1.75000** | **1.62500** | -0.12500 | |" in text
    assert "| **held-out logs, size-weighted** | 50 | **1.00000** | **2.00000** | +1.00000 | |" in text
    monkeypatch.setattr(presets_on_logs, "log_files", lambda: [])
    assert presets_on_logs.table("glnn", "rehearsal") is None
