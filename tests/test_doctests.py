"""The runnable examples in docstrings stay true."""

import doctest

import pytest

import seqd
import seqd.cli._client
import seqd.cli._display
import seqd.cli._parallel
import seqd.core.container
import seqd.core.ctw.learner
import seqd.core.online.learner
import seqd.daemon.config

MODULES = [seqd, seqd.core.online.learner, seqd.core.ctw.learner, seqd.core.container, seqd.daemon.config, seqd.cli._client,
           seqd.cli._display, seqd.cli._parallel]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module):
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
