"""``python -m seqd``: the ``seqd`` program."""

import sys

from seqd.cli import main

sys.exit(main())
