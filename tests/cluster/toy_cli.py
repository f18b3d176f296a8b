"""``sentsweep`` (its real CLI, :func:`sentsweep.cli.main`) with the toy method of tests/platform/sweep_toy.py
added to the method and search-space registries, the way a new method is added: the cluster tests run
``python -m tests.cluster.toy_cli sweep CONFIG --address ...`` and ``... resume s3://...`` as separate driver
processes that a test can SIGKILL. The Ray nodes import the toy from the repository root on their PYTHONPATH.
"""

from __future__ import annotations

import sys

from sentsweep.cli import main
from sentsweep.search_spaces import SEARCH_SPACES
from sentsweep.trainables.registry import METHODS
from tests.platform.sweep_toy import TOY, TOY_SPACE

METHODS[TOY.name] = TOY
SEARCH_SPACES[TOY_SPACE.name] = TOY_SPACE

if __name__ == "__main__":
    sys.exit(main())
