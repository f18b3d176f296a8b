"""A journal that came through the sweep's storage cannot make the machine replaying it upload or delete a folder of
its own: a staged copy is only ever the one beside the journal, and the journals of a driver's folder upload staged
copies only (a real sqlite MLflow store, real journals; the 'victim' is a folder of the replaying machine)."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from sentsweep.tracking.journal import DRIVER_JOURNALS, STAGED, TRIAL_JOURNAL, Journal, JournalState
from sentsweep.tracking.replay import Replayer


def _run(tracking_uri: str, tmp_path: Path) -> tuple[MlflowClient, str]:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("paths", artifact_location=(tmp_path / "artifacts").as_uri())
    return client, client.create_run(experiment).info.run_id


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

    state = Replayer(client).flush(journal)

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
    Replayer(client).flush(journal)
    assert _artifacts(client, run_id) == ["best"] and (best / "model.safetensors").exists()
