"""A sweep folder in shared storage is written by anyone with the bucket's keys: ``sync``, ``resume`` and
``dashboard`` contact only the servers its user names and act only on the folder's own sweep run
(:mod:`sentsweep.platform.folder.trust`). Real parts: moto's S3 server, a sqlite MLflow store,
an HTTP server that records what reaches it."""

from __future__ import annotations

import json
import uuid

import pytest
from mlflow import MlflowClient

from sentsweep.cli import main
from sentsweep.errors import ConfigError
from sentsweep.platform.driver.sweep import resume_sweep
from sentsweep.platform.driver.sync import recorded_register_name, sync_sweep
from sentsweep.platform.folder.trust import TRACKING_URI_ENV, trusted_tracking_uri
from sentsweep.platform.location import MANIFEST, SweepLocation, SweepManifest, locate
from sentsweep.platform.tracking.run_writes import PENDING_FILE
from sentsweep.tracking.vocabulary import PARENT_TAG, ROLE_TAG, TRIAL_ID_TAG
from tests.platform.capture_server import capturing_server
from tests.platform.conftest import BUCKET
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE


def _plant(location: SweepLocation, **changes: object) -> SweepManifest:
    """The folder's manifest rewritten with ``changes``, as someone with the bucket's keys could."""
    manifest = location.read_manifest().model_copy(update=changes)
    location.write_text(MANIFEST, manifest.model_dump_json())
    return manifest


def test_a_remote_folder_names_its_tracking_server_only_to_a_user_who_declared_it(
        remote_sweep, s3_endpoint, tracking_uri, private_cache, monkeypatch, capsys):
    location, parent, _ = remote_sweep
    with capturing_server() as (planted_uri, heard):
        _plant(location, tracking_uri=planted_uri)
        monkeypatch.delenv(TRACKING_URI_ENV)
        with pytest.raises(ConfigError, match=f"pass --tracking-uri .*this folder names {planted_uri}"):
            sync_sweep(location.uri, s3_endpoint)
        with pytest.raises(ConfigError, match="pass --tracking-uri"):
            resume_sweep(location.uri, endpoint_url=s3_endpoint, preflight=False)
        monkeypatch.setenv(TRACKING_URI_ENV, tracking_uri)  # the user's own server: not the planted one
        with pytest.raises(ConfigError, match=rf"not at {tracking_uri} \(\${TRACKING_URI_ENV}\)"):
            sync_sweep(location.uri, s3_endpoint)
        with pytest.raises(ConfigError, match=r"not at .* \(--tracking-uri\)"):
            sync_sweep(location.uri, s3_endpoint, tracking_uri=tracking_uri)
        capsys.readouterr()
        assert main(["sync", location.uri, "--storage-endpoint-url", s3_endpoint]) == 2
        assert heard == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and MANIFEST in err[0] and "Traceback" not in err[0]
    assert MlflowClient(tracking_uri=tracking_uri).get_run(parent).info.status == "RUNNING"


def test_a_manifest_naming_another_folders_sweep_run_is_refused(remote_sweep, s3_endpoint, tracking_uri,
                                                                 private_cache):
    """A folder planted beside a sweep, whose manifest names that sweep's parent run: its saved writes would be
    delivered to the sweep's runs with the syncing user's login, and a resume would take the sweep over."""
    location, parent, _ = remote_sweep
    client = MlflowClient(tracking_uri=tracking_uri)
    name = f"planted-{uuid.uuid4().hex[:6]}"
    planted = locate(f"s3://{BUCKET}/ray_results/{name}", s3_endpoint)
    planted.write_text(MANIFEST, location.read_manifest().model_copy(update={"sweep_name": name}).model_dump_json())
    fs, root = planted.resolve()
    with fs.open_output_stream(f"{root}/{PENDING_FILE}") as out:
        out.write(f'[{{"op": "tags", "run": "{parent}", "tags": {{"sentsweep.note": "planted"}}}}, '
                  f'{{"op": "status", "run": "{parent}", "status": "KILLED"}}]'.encode())

    with pytest.raises(ConfigError, match=f"sweep run of {location.uri}, not of {planted.uri}"):
        sync_sweep(planted.uri, s3_endpoint)
    with pytest.raises(ConfigError, match="not this folder's sweep"):
        resume_sweep(planted.uri, endpoint_url=s3_endpoint, preflight=False, trainable=TOY_TRAINABLE, space=TOY_SPACE)
    run = client.get_run(parent)
    assert run.info.status == "RUNNING" and "sentsweep.note" not in run.data.tags
    synced = sync_sweep(location.uri, s3_endpoint)  # the sweep's own folder: trusted
    assert (synced.uri, synced.waiting, synced.writes) == (tracking_uri, False, 0)


def test_a_folder_whose_sweep_run_is_not_in_the_store_is_one_line_naming_the_manifest(tmp_path, tracking_uri,
                                                                                     private_cache, capsys):
    location = locate(str(tmp_path / "toy-1"))
    location.write_text(MANIFEST, SweepManifest(sweep_name="toy-1", config={"name": "toy", "method": "cosent"},
                                                parent_run_id=uuid.uuid4().hex, experiment_id="0",
                                                tracking_uri=tracking_uri, created=0.0).model_dump_json())
    for command in ("resume", "sync"):
        assert main([command, location.uri]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"sentsweep {command}: error: {location.uri}/{MANIFEST}: the manifest's sweep run ")
        assert "is not in the tracking store" in err and err.count("\n") == 1


def test_a_local_folder_is_the_users_own_unless_a_declared_uri_differs(tmp_path, monkeypatch):
    location = SweepLocation(str(tmp_path), "toy", None, str(tmp_path / "toy"))
    manifest = SweepManifest(sweep_name="toy", config={}, parent_run_id="p", experiment_id="1",
                             tracking_uri=f"sqlite:///{tmp_path / 'mlruns.db'}", created=0.0)
    monkeypatch.setenv(TRACKING_URI_ENV, "http://127.0.0.1:9")  # another project's: not consulted for a local folder
    assert trusted_tracking_uri(manifest, location, None) == manifest.tracking_uri
    monkeypatch.chdir(tmp_path)
    assert trusted_tracking_uri(manifest, location, "sqlite:///mlruns.db") == manifest.tracking_uri  # made absolute
    server = manifest.model_copy(update={"tracking_uri": "http://mlflow:5000"})
    assert trusted_tracking_uri(server, location, "http://me:s3cret@mlflow:5000/") == "http://mlflow:5000"  # a login
    with pytest.raises(ConfigError, match="not at http://me:\\*\\*\\*@mlflow:5000") as refused:
        trusted_tracking_uri(manifest, location, "http://me:s3cret@mlflow:5000")
    assert "s3cret" not in str(refused.value)


def test_resume_interrupted_passes_over_a_shared_folder_whose_run_is_another_folders(
        remote_sweep, s3_endpoint, tracking_uri, private_cache):
    """A moved (or copied) folder would be refused by every retry of a RayJob: ``--resume-interrupted`` passes it
    over with a warning (and starts anew) instead."""
    from sentsweep.platform.driver.resume import is_resumable, previous_sweep
    from sentsweep.platform.location import sweep_owner
    from sentsweep.tracking.vocabulary import SWEEP_DIR_TAG

    location, parent, _ = remote_sweep
    manifest = location.read_manifest()
    root = f"s3://{BUCKET}/auto-{uuid.uuid4().hex[:6]}"
    config = manifest.sweep_config().model_copy(update={"storage_path": root, "storage_endpoint_url": s3_endpoint})
    folder = locate(f"{root}/{config.name}-20261124-120000-abcd", s3_endpoint)
    folder.write_text(MANIFEST, manifest.model_copy(update={"sweep_name": folder.name, "owner": sweep_owner(),
                                                            "config": config.model_dump(mode="json")}
                                                    ).model_dump_json())
    client = MlflowClient(tracking_uri=tracking_uri)
    client.set_tag(parent, SWEEP_DIR_TAG, folder.uri)
    found = previous_sweep(config)
    assert found is not None and found.uri == folder.uri and is_resumable(found.status, found.tags)  # its own: resumed
    client.set_tag(parent, SWEEP_DIR_TAG, location.uri)  # the run of another folder
    assert previous_sweep(config) is None
    client.set_tag(parent, SWEEP_DIR_TAG, folder.uri)
    planted = locate(f"{root}/{config.name}-20991231-235959-beef", s3_endpoint)  # newer by its own word
    planted.write_text(MANIFEST, folder.read_manifest().model_copy(update={"sweep_name": planted.name,
                                                                          "created": 4e9}).model_dump_json())
    found = previous_sweep(config)  # the planted one is passed over, not the sweep
    assert found is not None and found.uri == folder.uri


@pytest.mark.parametrize("planted", ["http://evil.example\\@mlflow:5000", "http://evil.example\t@mlflow:5000",
                                     "http://evil.example @mlflow:5000"])
def test_a_stored_uri_the_http_client_reads_otherwise_is_refused(tmp_path, planted):
    """``urlsplit`` reads the host of ``http://evil\\@mlflow:5000`` as mlflow (so it matched the
    declared server), urllib3 as evil (which got the login). Such a stored URI is refused before any contact."""
    location = SweepLocation(str(tmp_path), "toy", None, str(tmp_path / "toy"))
    manifest = SweepManifest(sweep_name="toy", config={}, parent_run_id="p", experiment_id="1",
                             tracking_uri=planted, created=0.0)
    with pytest.raises(ConfigError, match="not a plain URI"):
        trusted_tracking_uri(manifest, location, "http://mlflow:5000")
    plain = manifest.model_copy(update={"tracking_uri": "http://mlflow:5000"})
    assert trusted_tracking_uri(plain, location, "http://mlflow:5000/") == "http://mlflow:5000"


def test_a_shared_folder_is_resumed_outside_the_cluster_only_when_its_writers_are_trusted(
        remote_sweep, s3_endpoint, tracking_uri, private_cache, monkeypatch):
    """A resume unpickles Tune's state (``tuner.pkl``: the trainable, the searcher), which
    any job with the bucket's keys (every trial on the cluster) could replace with code. On a workstation that code
    would run with the user's credentials: refused, one line, before anything is unpickled, unless ``--trust-storage``
    or in one of the platform's Ray pods (which hold those keys already; not any pod of any
    namespace). A local folder is the user's own."""
    from sentsweep.config import KUBERNETES_ENV, PLATFORM_POD_ENV
    from sentsweep.platform.folder.trust import refuse_untrusted_state

    location, parent, _ = remote_sweep
    monkeypatch.delenv(KUBERNETES_ENV, raising=False)
    monkeypatch.delenv(PLATFORM_POD_ENV, raising=False)
    monkeypatch.setenv(TRACKING_URI_ENV, tracking_uri)  # the folder's server, declared: that check passes
    planted = location.file_uri("tuner.pkl")
    location.write_text("tuner.pkl", "not a pickle: a restore would fail on it, the check must come first")
    with pytest.raises(ConfigError, match="unpickles Ray Tune's and the searcher's state") as info:
        resume_sweep(location.uri, endpoint_url=s3_endpoint, preflight=False, trainable=TOY_TRAINABLE,
                     space=TOY_SPACE)
    assert info.value.field == "--trust-storage" and planted.endswith("tuner.pkl")
    from sentsweep.cli import build_parser

    assert build_parser().parse_args(["resume", location.uri, "--trust-storage"]).trust_storage is True
    assert MlflowClient(tracking_uri=tracking_uri).get_run(parent).info.status == "RUNNING", "nothing was resumed"
    refuse_untrusted_state(location, trust_storage=True)
    monkeypatch.setenv(KUBERNETES_ENV, "10.96.0.1")  # any pod of any namespace (a notebook, a CI runner): refused
    with pytest.raises(ConfigError, match="unpickles"):
        refuse_untrusted_state(location, trust_storage=False)
    monkeypatch.setenv(PLATFORM_POD_ENV, "1")  # one of the platform's Ray pods (k8s/): resumed
    refuse_untrusted_state(location, trust_storage=False)
    monkeypatch.delenv(KUBERNETES_ENV)  # the marker alone, outside Kubernetes: refused
    with pytest.raises(ConfigError, match="unpickles"):
        refuse_untrusted_state(location, trust_storage=False)
    monkeypatch.delenv(PLATFORM_POD_ENV)
    refuse_untrusted_state(SweepLocation("/tmp", "toy", None, "/tmp/toy"), trust_storage=False)


def test_a_stage_state_naming_another_sweeps_run_is_refused(remote_sweep, s3_endpoint, tracking_uri, private_cache):
    """A confirmation state planted in the folder, naming a run of another sweep as the stage's: ``sync`` would end
    that run's trials KILLED and deliver the stage folder's saved writes to it with the syncing user's login."""
    from sentsweep.platform.confirm.stage import STAGE_DIR, STATE_FILE

    location, parent, experiment_id = remote_sweep
    client = MlflowClient(tracking_uri=tracking_uri)
    other = client.create_run(experiment_id, run_name="another-sweep", tags={"sentsweep.role": "sweep"}).info.run_id
    live = client.create_run(experiment_id, tags={PARENT_TAG: other, TRIAL_ID_TAG: "x1", ROLE_TAG: "trial"})
    location.write_text(STATE_FILE, json.dumps({"status": "running", "run_id": other}))
    fs, root = location.resolve()
    with fs.open_output_stream(f"{root}/{STAGE_DIR}/{PENDING_FILE}") as out:
        out.write(f'[{{"op": "status", "run": "{other}", "status": "KILLED"}}]'.encode())

    with pytest.raises(ConfigError, match=f"{STATE_FILE}.*not this sweep's confirmation run"):
        sync_sweep(location.uri, s3_endpoint)
    assert client.get_run(other).info.status == "RUNNING"
    assert client.get_run(live.info.run_id).info.status == "RUNNING"
    own = client.create_run(experiment_id, tags={PARENT_TAG: parent, ROLE_TAG: "confirmation"}).info.run_id
    location.write_text(STATE_FILE, json.dumps({"status": "running", "run_id": own}))
    fs.delete_file(f"{root}/{STAGE_DIR}/{PENDING_FILE}")
    assert not sync_sweep(location.uri, s3_endpoint).waiting  # the sweep's own stage run


def test_saved_writes_register_only_the_name_the_sweep_run_recorded(remote_sweep, s3_endpoint, tracking_uri,
                                                                   private_cache):
    """A manifest whose ``register_model`` was rewritten to another team's model: the sweep run's own param says
    which name the sweep registers, and a saved registration under another is not delivered."""
    location, parent, _ = remote_sweep
    client = MlflowClient(tracking_uri=tracking_uri)
    client.log_param(parent, "register_model", "toy-model")  # as the sweep run recorded it when it opened
    manifest = location.read_manifest()
    _plant(location, config={**manifest.config, "register_model": "their-model"})
    fs, root = location.resolve()
    with fs.open_output_stream(f"{root}/{PENDING_FILE}") as out:
        out.write(f'[{{"op": "register", "run": "{parent}", "name": "their-model", "path": "best_model"}}]'.encode())

    synced = sync_sweep(location.uri, s3_endpoint)
    assert (synced.waiting, synced.writes) == (False, 0)
    assert client.search_registered_models("name = 'their-model'") == []
    own = _plant(location, config={**manifest.config, "register_model": "toy-model"})
    assert recorded_register_name(client.get_run(parent), own) == "toy-model"
