"""The runnable examples in docstrings stay true: every module of seqd whose source holds one is run."""

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import seqd

MODULES = [seqd] + [module for module in (
    importlib.import_module(info.name) for info in pkgutil.walk_packages(seqd.__path__, "seqd.")
    if not info.name.endswith("__main__")) if ">>>" in Path(module.__file__).read_text()]


def test_the_examples_are_found():
    names = {module.__name__ for module in MODULES}
    assert {"seqd.core.online.learner", "seqd.core.ctw.learner", "seqd.core.esn.learner",
            "seqd.core.lstm.learner"} <= names


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module):
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    # a module whose every example needs a daemon marks them +SKIP (the client's)
    assert failures == 0 and (tried > 0 or "doctest: +SKIP" in Path(module.__file__).read_text())
