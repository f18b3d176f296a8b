"""Run sweeps on a remote Ray cluster through the Ray Jobs API, then follow, list and stop them.

Modules: ``credentials`` (the Ray token, forwarded variables, masks), ``prepare`` (the shipped config and working
dir), ``jobspec`` (entrypoint, runtime environment, where the driver runs, summary) and ``client``
(:class:`~.client.ClusterJobs`, the Jobs API, and what ``sentsweep jobs`` prints). The commands are in
:mod:`sentsweep.cli.cluster`, and what travels with a job is described in ``docs/operate.md``. Nothing here reads
``os.environ`` or imports Ray at import time.
"""

from __future__ import annotations
