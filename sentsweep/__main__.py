"""``python -m sentsweep``: the ``sentsweep`` command, for an environment whose scripts folder is not on ``PATH``."""

import sys

from sentsweep.cli import main

sys.exit(main())
