"""Run sweeps on a remote Ray cluster through the Ray Jobs API, then follow, list and stop them.

Modules: ``auth`` (the Ray token), ``credentials`` (forwarded variables, masking, redaction), ``prepare`` (the
shipped config), ``staging`` (the working dir, requirements), ``placement`` (where the driver runs),
``jobspec`` (entrypoint, runtime environment, summary), ``client`` (:class:`~.client.ClusterJobs`, the Jobs
API) and ``job_tables`` (what ``sentsweep jobs`` prints).
The commands are in :mod:`sentsweep.cli.cluster`; nothing here reads ``os.environ`` or imports Ray at import time.

Usage (the dashboard address defaults to ``$RAY_API_SERVER_ADDRESS``, else ``$RAY_ADDRESS``, else
``http://127.0.0.1:8265``; on Kubernetes, ``kubectl port-forward svc/<cluster>-head-svc 8265:8265``; the
token of a cluster with token auth from ``--token-file``, ``$RAY_AUTH_TOKEN`` or ``$RAY_AUTH_TOKEN_PATH``,
see :mod:`.auth`)::

    sentsweep submit configs/demo.yaml --address http://HEAD:8265 --token-file ~/.ray/team-a.token \\
        --storage s3://sweeps/demo --storage-endpoint-url http://minio:9000 \\
        --tracking-uri http://mlflow:5000 --set num_samples=32 --driver-resources --follow
    sentsweep submit configs/demo.yaml --dry-run          # validate, stage and show the job; submit nothing
    sentsweep jobs list
    sentsweep jobs status JOB_ID
    sentsweep jobs logs JOB_ID --follow                   # exits 0 when the job SUCCEEDED, 1 otherwise
    sentsweep jobs stop JOB_ID
    sentsweep submit --resume s3://sweeps/demo/demo-cosent-20250101-120000-ab12 \\
        --storage-endpoint-url http://minio:9000          # continue a sweep after a head restart

What travels with a job:

* **The config**, with ``--set``, ``--storage``, ``--storage-endpoint-url`` and ``--tracking-uri`` baked in.
  It is validated here first (:func:`~.prepare.prepare_config`: the sweep config, then the trial
  settings against the method), so a typo fails on this machine with the field named, before any upload.
* **The code**, one of two ways:

  - default: ``working_dir`` is a staged copy of this checkout: ``sentsweep/`` (sources and the bundled
    sample data), ``pyproject.toml``, ``constraints.txt``, ``README.md``, and the config as
    ``configs/<file>``. Virtual environments, caches, ``runs``, ``ray_results``, ``mlruns*``,
    ``mlartifacts``, databases and ``*.egg-info`` stay behind (:data:`~.staging.EXCLUDES`). Ray zips it into
    the cluster's object store and unpacks it as the job's working directory, which is also on every trial
    worker's ``PYTHONPATH``: the cluster runs this checkout's code on its own Python. With ``--pip`` (or
    ``--uv``), the job first installs the pinned requirements of ``pyproject.toml`` into its own
    environment (slow; for clusters whose image lacks them).
  - ``--installed``: the cluster's image already has sentsweep (``docker/Dockerfile`` on the KubeRay
    cluster of ``k8s/``); ``working_dir`` holds only the config.

  There is no container-image option: Ray's ``image_uri`` needs podman inside the Ray containers, which the
  hardened pods of ``k8s/`` (no privileges, read-only root) cannot run; build the image instead.

* **The entrypoint**: ``python -m sentsweep.cli sweep configs/<file>``, not the ``sentsweep`` console script,
  which a working-dir copy does not install (``--python`` names another interpreter).
* **The environment**: nothing of this machine's unless named: ``--forward-env NAME`` copies a variable,
  ``--env NAME=VALUE`` sets one; plus ``MLFLOW_TRACKING_URI`` for a tracking server and ``SENTSWEEP_OWNER``
  (the submitting user, part of the sweep's identity). A login in a URI (the config's, ``--storage``,
  ``--tracking-uri``, ``--resume``...) is refused (:func:`~.credentials.refuse_credentials`), never moved
  into the job's environment or shipped in its config or entrypoint. The credentials set here that stay
  here (:data:`~.credentials.CREDENTIAL_ENV`) are named in the summary; the Ray token is never forwarded.
  Values are never printed or logged; summaries name the variables, masked. Anyone who can read the
  cluster's Jobs API can read a job's runtime environment, so on a shared cluster the pods' own
  credentials (Kubernetes Secrets) are the right ones.
* **The driver's placement**: ``--driver-resources`` asks for the ``sweep_driver`` resource that only the
  CPU workers of ``k8s/`` offer (:mod:`.placement`), so the driver and the final evaluation leave the head.
* **The storage**: ``--storage`` (``s3://bucket/prefix`` with ``--storage-endpoint-url`` for MinIO, or a path
  on a volume every node mounts) replaces ``storage_path``, so Tune's experiment state outlives the head.
  The job's log names the sweep folder; ``sentsweep submit --resume FOLDER`` continues the sweep in a new job.
"""

from __future__ import annotations
