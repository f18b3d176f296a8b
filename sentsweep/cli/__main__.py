"""``python -m sentsweep.cli``: the ``sentsweep`` command without its console script (what Ray jobs run)."""

from __future__ import annotations

import sys

from sentsweep.cli import main

if __name__ == "__main__":
    sys.exit(main())
