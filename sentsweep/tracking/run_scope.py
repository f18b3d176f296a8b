"""The MLflow runs a journal replay may act on: those of the sweep it replays for.

A journal is as trustworthy as whoever can write where it lies: the driver journals of a remote sweep are copied
into the sweep's storage (``<sweep>/tracking-journals/``, possibly a shared bucket) and ``sentsweep sync`` or
``resume`` on any machine replays them with that user's MLflow identity. A journal (or its state file, which names
the run its entries go to) planted there could name any run id: another team's runs, to overwrite their tags, log
into them or end them. So a :class:`~sentsweep.tracking.replay.Replayer` acts only on the runs of one
:class:`SweepScope`, the hierarchy a sweep creates (:mod:`sentsweep.platform.sweep_tracking`,
:mod:`sentsweep.platform.confirmation`), all in the sweep's experiment:

- the scope's root: the sweep's parent run (or, for the journals of the confirmation stage, the stage's run);
- its children (tag :data:`~sentsweep.tracking.vocabulary.PARENT_TAG` naming the root): the trials' runs and the
  ``confirmation`` run;
- the children of a child whose role is :data:`~sentsweep.tracking.vocabulary.CONFIRMATION_ROLE`: the confirmation
  trials' runs.

What MLflow holds (a run's experiment and tags) is trusted: only MLflow's users write it; the scope itself (the
experiment and root) comes from the replayer's owner (the sweep's manifest for ``sync`` and ``resume``, the trial
settings for a trial), never from a journal.

A scope may also name the sweep folder its manifest came from (``sweep_dir``): the root must then be that folder's
run (its :data:`~sentsweep.tracking.vocabulary.SWEEP_DIR_TAG`, written when the sweep began), so a manifest planted
in another folder cannot lend its replay (and with it the replaying user's login) another sweep's runs.

A scope without a root (a standalone trial's own journal) admits any run of its experiment. Every run id is looked
up once per scope (one ``get_run``; none for a run the replayer found or created itself), whatever the length of
the replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from sentsweep.tracking.vocabulary import CONFIRMATION_ROLE, PARENT_TAG, ROLE_TAG, SWEEP_DIR_TAG

#: The parent run's param naming the model its sweep registers (the config's ``register_model``, logged as a param).
REGISTER_PARAM = "register_model"

if TYPE_CHECKING:
    from mlflow.entities import Run


@dataclass(frozen=True)
class RunFacts:
    """What a scope needs to know of a run: its experiment, its parent run, its role and its sweep folder (tags)."""

    experiment_id: str
    parent_run_id: str | None
    role: str | None
    sweep_dir: str | None = None

    @classmethod
    def of(cls, run: Run) -> RunFacts:
        tags = run.data.tags
        return cls(run.info.experiment_id, tags.get(PARENT_TAG), tags.get(ROLE_TAG), tags.get(SWEEP_DIR_TAG))


@dataclass
class SweepScope:
    """The runs of one sweep: the root run ``parent_run_id`` and its hierarchy, in experiment ``experiment_id``
    (any run of the experiment when there is no root); with ``sweep_dir``, a root recorded for that folder only.
    Remembers what it found out about each run id."""

    experiment_id: str
    parent_run_id: str | None = None
    sweep_dir: str | None = None
    _facts: dict[str, RunFacts | None] = field(default_factory=dict, init=False, repr=False)  # None: no such run
    _registers: str | None = field(default=None, init=False, repr=False)  # the root's register_model param

    def refusal(self, client: MlflowClient, run_id: object) -> str | None:
        """Why the run ``run_id`` is not one of the sweep's (None: it is); MLflow is asked once per run id."""
        if not isinstance(run_id, str):  # a state file or an entry is data from wherever the journal came from
            return f"{run_id!r} is not a run id"
        return self._judge(client, run_id, self._lookup(client, run_id))

    def refusal_of(self, client: MlflowClient, run: Run) -> str | None:
        """:meth:`refusal` of a run at hand (one the replayer found or created: nothing more fetched for it)."""
        self._facts[run.info.run_id] = RunFacts.of(run)
        return self.refusal(client, run.info.run_id)

    def open_refusal(self, client: MlflowClient, experiment_id: object, parent_run_id: object) -> str | None:
        """Why an ``open`` entry may not find or create a run in ``experiment_id`` under ``parent_run_id`` (None: it
        may): only in the sweep's experiment, under a run whose children are the sweep's."""
        if str(experiment_id) != self.experiment_id:
            return f"experiment {experiment_id} is not the sweep's ({self.experiment_id})"
        if (parent_run_id is None and self.parent_run_id is None) or self._is_parent(client, parent_run_id):
            return None
        return f"a run under {parent_run_id or 'no parent'} is not one of the sweep's (under {self.parent_run_id})"

    def register_refusal(self, client: MlflowClient, name: object) -> str | None:
        """Why a ``register`` entry may not register a model version as ``name`` (None: it may): only as the
        sweep's own ``register_model``, the root run's param (the sweep's owner wrote it when creating the run, and
        MLflow params never change), so a planted journal cannot add a version to another team's model."""
        if self.parent_run_id is None:
            return "no sweep run to register a model for"
        if self._registers is None:
            self._registers = client.get_run(self.parent_run_id).data.params.get(REGISTER_PARAM, "")
        if not isinstance(name, str) or not name or name != self._registers:
            return f"the sweep registers {self._registers or 'no model'!r}, not {name!r}"
        return None

    def _lookup(self, client: MlflowClient, run_id: str) -> RunFacts | None:
        """The facts of the run ``run_id`` (None: MLflow has no such run), fetched once."""
        if run_id not in self._facts:
            run = _get_run(client, run_id)
            self._facts[run_id] = None if run is None else RunFacts.of(run)
        return self._facts[run_id]

    def _judge(self, client: MlflowClient, run_id: str, facts: RunFacts | None) -> str | None:
        """Why the run ``run_id`` (``facts``) is not one of the sweep's (None: it is)."""
        if facts is None:
            return f"no run {run_id} in MLflow"
        if facts.experiment_id != self.experiment_id:
            return f"run {run_id} is in experiment {facts.experiment_id}, not in the sweep's ({self.experiment_id})"
        if run_id == self.parent_run_id:
            return self._folder_refusal(facts)
        if self.parent_run_id is None or self._is_parent(client, facts.parent_run_id):
            return None
        return f"run {run_id} is not under the sweep's run {self.parent_run_id}"

    def _folder_refusal(self, root: RunFacts) -> str | None:
        """Why the root run (``root``) is not the sweep of folder ``sweep_dir`` (None: it is, or no folder given)."""
        if self.sweep_dir is None or same_folder(root.sweep_dir, self.sweep_dir):
            return None
        return (f"run {self.parent_run_id} is the sweep run of {root.sweep_dir or 'no sweep folder'}, not of "
                f"{self.sweep_dir}")

    def _is_parent(self, client: MlflowClient, run_id: object) -> bool:
        """Whether the children of the run ``run_id`` are the sweep's: the root (in the sweep's experiment), or a
        confirmation run under it."""
        if not isinstance(run_id, str) or self.parent_run_id is None or self.refusal(client, self.parent_run_id):
            return False
        if run_id == self.parent_run_id:
            return True
        facts = self._lookup(client, run_id)
        return (facts is not None and facts.experiment_id == self.experiment_id and facts.role == CONFIRMATION_ROLE
                and facts.parent_run_id == self.parent_run_id)


def same_folder(recorded: str | None, folder: str) -> bool:
    """Whether the folder a run recorded (its :data:`SWEEP_DIR_TAG`) is ``folder`` (a trailing ``/`` aside)."""
    return recorded is not None and recorded.rstrip("/") == folder.rstrip("/")


def _get_run(client: MlflowClient, run_id: str) -> Run | None:
    """The run ``run_id``; None when MLflow has no such run (any other error propagates: a transient one is retried
    with the entry)."""
    try:
        return client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return None
        raise
