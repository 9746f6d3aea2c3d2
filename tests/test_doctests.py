"""The runnable examples in docstrings stay true."""

import doctest

import pytest

import seqd.core.container
import seqd.core.online.learner
import seqd.daemon.config

MODULES = [seqd.core.online.learner, seqd.core.container, seqd.daemon.config]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module):
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
