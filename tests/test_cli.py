"""`seqd train` as a user runs it."""

from __future__ import annotations

import json

import pytest

from seqd.daemon.cli import main


def test_train_json_reports_regret_rates_and_trajectory(capsys):
    code = main(["train", "--task", "anbn", "--size", "2", "--units", "4", "--steps", "6", "--evaluations", "3", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == 6 and len(out["trajectory"]) == 6
    assert out["trajectory"] == sorted(out["trajectory"])  # never a degrading step
    assert out["validation_true_log2_likelihood"] < 0 and out["validation_regret"] > 0
    assert {"rate_w", "rate_tau", "best_validation_regret", "stopped_validation_regret", "validation_curve"} <= set(out)
    assert out["experiment"]["task"] == "anbn"


def test_train_human_output(capsys):
    assert main(["train", "--task", "music", "--size", "5", "--units", "4", "--steps", "4", "--evaluations", "2"]) == 0
    out = capsys.readouterr().out
    assert "validation regret" in out and "music: GLNN rbpm N=4" in out


def test_train_errors_are_one_line(capsys):
    assert main(["train", "--task", "music", "--size", "5"]) == 1
    assert "give a budget" in capsys.readouterr().err
    assert main(["train", "--task", "music", "--size", "5", "--units", "3", "--degree", "9", "--steps", "1"]) == 1
    assert "degree" in capsys.readouterr().err
    assert main(["train", "--model", "rnn", "--method", "rbpm", "--size", "5", "--steps", "1"]) == 1
    assert "qdrbpm" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--task", "nope"])
