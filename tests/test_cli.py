"""`seqd train` as a user runs it."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from seqd.cli import main


def test_train_json_reports_regret_rates_and_trajectory(capsys):
    code = main(["train", "--task", "anbn", "--size", "2", "--units", "4", "--steps", "6", "--evaluations", "3", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == 6 and len(out["trajectory"]) == 6
    assert out["trajectory"] == sorted(out["trajectory"])  # never a degrading step
    assert out["validation_true_log2_likelihood"] < 0 and out["validation_regret"] > 0
    assert {"rate_w", "rate_tau", "best_validation_regret", "stopped_validation_regret", "validation_curve"} <= set(out)
    assert out["experiment"]["task"] == "anbn"


@pytest.mark.parametrize("args", [["--task", "anbn", "--size", "2", "--units", "4", "--steps", "4"],
                                  ["--task", "alphabet", "--size", "30", "--model", "ctw"]])
def test_train_splits_each_checkpoints_regret_over_the_tasks_places(capsys, args):
    """``regret_by_place`` (``tasks.places``) adds up to the checkpoint's regret, for a batch and an online model."""
    assert main(["train", *args, "--evaluations", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for point in out["validation_curve"]:
        split = point["regret_by_place"]
        assert "the rest" in split and len(split) == 2 + (out["experiment"]["task"] == "alphabet")
        assert sum(split.values()) == pytest.approx(point["regret"], rel=1e-9, abs=1e-6)
    picked = min(out["validation_curve"], key=lambda p: p["stopping_regret"])
    assert out["stopped_regret_by_place"] == picked["regret_by_place"]  # the early-stopped regret's split


def test_train_human_output(capsys):
    assert main(["train", "--task", "music", "--size", "5", "--units", "4", "--steps", "4", "--evaluations", "2"]) == 0
    out = capsys.readouterr().out
    assert "validation regret" in out and "music: GLNN rbpm N=4" in out
    assert "of which, at the picked checkpoint: pitches" in out  # where the regret is paid (tasks.places)


def test_train_errors_are_one_line(capsys):
    assert main(["train", "--task", "music", "--size", "5"]) == 1
    assert "give a budget" in capsys.readouterr().err
    assert main(["train", "--task", "music", "--size", "5", "--units", "3", "--degree", "9", "--steps", "1"]) == 1
    assert "degree" in capsys.readouterr().err
    assert main(["train", "--model", "rnn", "--method", "rbpm", "--size", "5", "--steps", "1"]) == 1
    assert "qdrbpm" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--task", "nope"])
    assert main(["train", "--model", "hmm", "--size", "5", "--steps", "1", "--clip", "1"]) == 1
    assert "--clip is a setting of the gradient-trained batch networks" in capsys.readouterr().err
    assert main(["train", "--model", "rnn", "--method", "hf", "--size", "5", "--steps", "1", "--clip", "1"]) == 1
    assert "Hessian-free steps are damped instead" in capsys.readouterr().err
    assert main(["train", "--model", "batch-lstm", "--method", "rbpm", "--size", "5", "--steps", "1"]) == 1
    assert "method must be one of plain, dhfb" in capsys.readouterr().err


def test_train_hessian_free(capsys):
    assert main(["train", "--task", "xor", "--length", "6", "--size", "30", "--model", "rnn", "--method", "hf",
                 "--units", "4", "--degree", "4", "--steps", "3", "--evaluations", "2"]) == 0
    out = capsys.readouterr().out
    assert "xor: RNN hf N=4" in out and "Hessian-free steps" in out and "damping: lambda" in out


def test_train_the_batch_lstm_clipped(capsys):
    assert main(["train", "--task", "anbn", "--model", "batch-lstm", "--size", "3", "--units", "4", "--steps", "4",
                 "--evaluations", "2", "--clip", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "anbn: LSTM (diagonal Hessian for w" in out and "N=4 d=3" in out


def _app_log(tmp_path):
    """A small log file: its path and bytes."""
    data = b"2025-06-24 14:36:25 status installed libc-bin:amd64\n" * 40
    path = tmp_path / "app.log"
    path.write_bytes(data)
    return path, data


def test_eval_reports_the_learners_code_length(tmp_path, capsys):
    from seqd.core.bits import BitsConfig, BitsLearner
    from seqd.core.online import OnlineConfig, OnlineLearner

    path, data = _app_log(tmp_path)
    # the default preset, bytes: today's byte model, bitwise, with two settings changed
    assert main(["eval", str(path), "--set", "units=3", "--set", "table_bits=14", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = BitsLearner(BitsConfig(units=3, table_bits=14)).learn(data)
    (result,) = out["files"]
    assert result["bytes"] == len(data)
    assert result["bits"] == pytest.approx(float(np.sum(expected)), rel=1e-12)
    assert out["config"]["units"] == 3 and out["overall"]["bits_per_byte"] < 8
    # seed 000's GLNN alone: its preset, a setting changed
    assert main(["eval", str(path), "--preset", "glnn", "--set", "units=6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = OnlineLearner(OnlineConfig(units=6, alphabet_cap=256)).learn(data)
    assert out["files"][0]["bits"] == pytest.approx(float(np.sum(expected)), rel=1e-12)
    assert out["config"] == json.loads(json.dumps(dataclasses.asdict(OnlineConfig(units=6, alphabet_cap=256))))
    # a frozen byte model by its version's name, a switch turned off and a tuple given
    assert main(["eval", str(path), "--preset", "bytes-12", "--set", "probability_maps=false",
                 "--set", "context-orders=1,2,4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = OnlineLearner(OnlineConfig.bytes_default(probability_maps=False, context_orders=(1, 2, 4))).learn(data)
    assert out["files"][0]["bits"] == pytest.approx(float(np.sum(expected)), rel=1e-12)


@pytest.mark.parametrize("flags, model", [
    (["--preset", "ctw", "--set", "depth=4", "--set", "alpha=0.125"], ("ctw", dict(depth=4, alpha=0.125))),
    (["--preset", "esn", "--set", "units=24", "--set", "leak=0.3"], ("esn", dict(units=24, leak=0.3)))],
    ids=["ctw", "esn"])
def test_eval_runs_the_baselines_with_their_settings(tmp_path, capsys, flags, model):
    from seqd.core.ctw import CTWConfig, CTWLearner
    from seqd.core.esn import ESNConfig, ESNLearner

    kind, settings = model
    config_type, learner_type = {"ctw": (CTWConfig, CTWLearner), "esn": (ESNConfig, ESNLearner)}[kind]
    path, data = _app_log(tmp_path)
    assert main(["eval", str(path), *flags, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    config = config_type(alphabet_cap=256, **settings)
    assert out["files"][0]["bits"] == pytest.approx(float(np.sum(learner_type(config).learn(data))), rel=1e-12)
    assert out["config"] == dataclasses.asdict(config)


@pytest.mark.parametrize("flags, message", [
    (["--preset", "ctw", "--set", "units=3"], "'units' is not a setting of CTWConfig"),
    (["--set", "dept=3"], "'dept' is not a setting of BitsConfig"),
    (["--preset", "glnn", "--set", "windw=4"], "did you mean window"),
    (["--set", "units"], "--set takes NAME=VALUE"),
    (["--set", "runs=maybe"], "'maybe' is not true or false"),
    (["--preset", "ctw", "--set", "depth=0"], "depth must be in")])
def test_eval_refuses_a_setting_of_another_model_or_out_of_bounds(tmp_path, capsys, flags, message):
    path, _ = _app_log(tmp_path)
    assert main(["eval", str(path), *flags]) == 1
    assert message in capsys.readouterr().err


def test_eval_lists_a_preset_s_settings(capsys):
    assert main(["eval", "--settings"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("settings of bytes (BitsConfig)") and "table_growth" in out and "true" in out
    assert main(["eval", "--preset", "ctw", "--settings"]) == 0
    assert "depth" in capsys.readouterr().out


def test_eval_json_stays_json_when_a_code_length_is_infinite(tmp_path, capsys, monkeypatch):
    """A model that gives a symbol probability 0 has an infinite code length: --json prints null (JSON has no
    infinity) and the count of such symbols, and stderr says what happened."""
    import seqd.cli.eval as eval_module
    from seqd.core.online import OnlineLearner

    class Certain(OnlineLearner):  # the learner's bits, with the first symbol given probability 0
        def learn(self, x):
            bits = super().learn(x)
            bits[0] = np.inf
            return bits

    monkeypatch.setattr(eval_module, "_learner", Certain)
    path = tmp_path / "app.log"
    path.write_bytes(b"GET /index.html 200\n" * 20)
    assert main(["eval", str(path), "--preset", "bytes-12", "--set", "units=3", "--set", "context_bits=10",
                 "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))
    (result,) = out["files"]
    assert result["bits"] is None and result["bits_per_byte"] is None and result["impossible_symbols"] == 1
    assert out["overall"]["bits"] is None and "probability 0" in captured.err and str(path) in captured.err


def test_json_output_has_no_infinity_or_nan():
    from seqd.cli._display import json_safe

    value = {"bits": float("inf"), "rate": float("nan"), "ok": True, "n": 3, "x": 0.5,
             "recent": [1.0, float("-inf")], "pair": (2.0, float("inf")), "nested": {"bits": float("inf")}}
    assert json_safe(value) == {"bits": None, "rate": None, "ok": True, "n": 3, "x": 0.5, "recent": [1.0, None],
                                "pair": [2.0, None], "nested": {"bits": None}}
    json.dumps(json_safe(value), allow_nan=False)


def test_eval_errors_are_one_line(tmp_path, capsys):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert main(["eval", str(empty)]) == 1
    assert "file is empty" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "missing.log")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["eval", str(empty), "--preset", "glnn", "--set", "metric_discount=2"]) == 1
    assert "metric_discount" in capsys.readouterr().err


def test_the_program_asks_numpy_for_one_blas_thread(monkeypatch):
    """BLAS threads would spin on the CPU after NumPy's import and share sums out by the number of cores."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    with pytest.raises(SystemExit):
        main(["--version"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert os.environ["MKL_NUM_THREADS"] == "3"  # what the user set is kept
