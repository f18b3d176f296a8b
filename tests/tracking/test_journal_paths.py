"""A journal that came through the sweep's storage cannot make the machine replaying it upload or delete a folder of
its own: a staged copy is only ever the one beside the journal, and the journals of a driver's folder upload staged
copies only (a real sqlite MLflow store, real journals; the 'victim' is a folder of the replaying machine)."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from sentsweep.tracking.journal import DRIVER_JOURNALS, STAGED, TRIAL_JOURNAL, Journal, JournalState
from sentsweep.tracking.replay import Replayer
from sentsweep.tracking.run_scope import SweepScope


def _run(tracking_uri: str, tmp_path: Path) -> tuple[MlflowClient, str]:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("paths", artifact_location=(tmp_path / "artifacts").as_uri())
    return client, client.create_run(experiment).info.run_id


def _replayer(client: MlflowClient, run_id: str) -> Replayer:
    """A replayer for the sweep whose parent run is ``run_id``."""
    return Replayer(client, SweepScope(client.get_run(run_id).info.experiment_id, run_id))


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "home" / ".ssh"
    victim.mkdir(parents=True)
    (victim / "id_ed25519").write_text("a private key")
    return victim


def _artifacts(client: MlflowClient, run_id: str) -> list[str]:
    return sorted(f.path for f in client.list_artifacts(run_id))


def test_a_journal_in_a_driver_folder_uploads_and_deletes_only_its_staged_copies(tmp_path, tracking_uri):
    client, run_id = _run(tracking_uri, tmp_path)
    victim = _victim(tmp_path)
    folder = tmp_path / "sweep" / DRIVER_JOURNALS  # e.g. pulled from <sweep folder>/tracking-journals on S3
    staged = folder / STAGED / "plots-1"
    staged.mkdir(parents=True)
    (staged / "curves.png").write_bytes(b"png")
    journal = Journal(folder / "parent.jsonl", run_id=run_id)
    journal.append({"op": "artifacts", "dir": str(victim), "path": "stolen", "remove": True})
    journal.append({"op": "artifacts", "dir": str(victim), "path": "copied"})
    journal.append({"op": "artifacts", "dir": str(tmp_path / "elsewhere" / "plots-1"), "path": "plots", "remove": True})
    journal.append({"op": "artifacts", "dir": str(victim / ".."), "path": "up", "remove": True})  # its name: '..'

    state = _replayer(client, run_id).flush(journal)

    assert state.delivered == 4 and state.skipped == 0
    assert (victim / "id_ed25519").read_text() == "a private key"  # neither uploaded nor deleted (nor its parent)
    assert _artifacts(client, run_id) == ["plots"]  # the staged copy of that name, beside the journal
    assert not staged.exists()  # removed once uploaded, as staged copies are
    assert journal.state() == JournalState(delivered=4, run_id=run_id)


def test_a_workers_own_journal_uploads_the_folder_it_names(tmp_path, tracking_uri):
    client, run_id = _run(tracking_uri, tmp_path)
    best = tmp_path / "node" / "trial_a" / "best"
    best.mkdir(parents=True)
    (best / "model.safetensors").write_bytes(b"weights")
    journal = Journal(tmp_path / "node" / "trial_a" / TRIAL_JOURNAL, run_id=run_id)
    journal.append({"op": "artifacts", "dir": str(best), "path": "best"})
    _replayer(client, run_id).flush(journal)
    assert _artifacts(client, run_id) == ["best"] and (best / "model.safetensors").exists()


def test_a_follow_entry_names_only_journals_beside_it_or_the_trials_own(tmp_path, tracking_uri):
    """A ``follow`` entry copied through the storage cannot make the replaying machine lock, parse and deliver a
    file of its own (review 13, r9): only a journal beside it, or a trial's journal in the sweep folder, is followed."""
    client, run_id = _run(tracking_uri, tmp_path)
    elsewhere = tmp_path / "home" / "notes.jsonl"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text('{"op": "tags", "tags": {"leaked": "1"}}\n')
    sweep = tmp_path / "sweep"
    trial = Journal(sweep / "trial_0" / TRIAL_JOURNAL, run_id=run_id)
    trial.append({"op": "tags", "tags": {"from_the_trial": "1"}})
    journal = Journal(sweep / DRIVER_JOURNALS / "trial-x.jsonl", run_id=run_id)
    journal.append({"op": "follow", "path": str(elsewhere), "upto": 1})
    journal.append({"op": "follow", "path": str(sweep / DRIVER_JOURNALS / ".." / "trial_0" / TRIAL_JOURNAL),
                    "upto": 1})
    _replayer(client, run_id).flush(journal)
    tags = client.get_run(run_id).data.tags
    assert "leaked" not in tags and tags["from_the_trial"] == "1"
    assert sorted(p.name for p in elsewhere.parent.iterdir()) == ["notes.jsonl"], "no lock or state beside it"


def test_a_manifest_naming_a_path_as_its_sweep_is_refused(tmp_path):
    """A manifest's sweep name names folders of the cache: a planted ``/abs/path`` or ``../x`` would move the driver
    journals (and the guard that uploads staged copies only) out of it (review 13, r2)."""
    import json

    import pytest

    from sentsweep.errors import ConfigError
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.storage import MANIFEST, SweepManifest, locate

    config = SweepConfig(name="s", method="cosent", storage_path=str(tmp_path))
    good = SweepManifest(sweep_name="s-20261124-101010-ab12", config=config.model_dump(mode="json"),
                         parent_run_id="p", experiment_id="1", tracking_uri="sqlite:///x.db", created=0)
    for name in ("/home/victim", "../../x", "a/b", ".hidden", "s\n"):
        (tmp_path / MANIFEST).write_text(json.dumps({**good.model_dump(), "sweep_name": name}))
        with pytest.raises(ConfigError, match="sweep_name: .* is not a sweep name"):
            locate(str(tmp_path)).read_manifest()
    (tmp_path / MANIFEST).write_text(good.model_dump_json())
    assert locate(str(tmp_path)).read_manifest().sweep_name == good.sweep_name
