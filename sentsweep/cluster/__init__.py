"""Run sweeps on a remote Ray cluster through the Ray Jobs API, then follow, list and stop them (the commands are
in :mod:`sentsweep.cli.cluster`; what travels with a job is in ``docs/operate.md``). Nothing here imports Ray at
import time."""
