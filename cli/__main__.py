"""``python -m seqd.cli``: the ``seqd`` program."""

import sys

from . import main

sys.exit(main())
