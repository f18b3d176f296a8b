"""Run sweeps on a remote Ray cluster through the Ray Jobs API, then follow, list and stop them.

Modules: ``credentials`` (forwarded variables, masking, redaction), ``prepare`` (the shipped config),
``staging`` (the working dir, requirements), ``jobspec`` (entrypoint, runtime environment, summary),
``client`` (:class:`~.client.ClusterJobs`, the Jobs API) and ``job_tables`` (what ``sentsweep jobs`` prints).
The commands are in :mod:`sentsweep.cli.cluster`; nothing here reads ``os.environ`` or imports Ray at import time.

Usage (the dashboard address defaults to ``$RAY_API_SERVER_ADDRESS``, else ``$RAY_ADDRESS``, else
``http://127.0.0.1:8265``; on Kubernetes, ``kubectl port-forward svc/<cluster>-head-svc 8265:8265``)::

    sentsweep submit configs/demo.yaml --address http://HEAD:8265 \\
        --storage s3://sweeps/demo --storage-endpoint-url http://minio:9000 \\
        --tracking-uri http://mlflow:5000 --set num_samples=32 --follow
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
* **The code**, one of three ways:

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
  - ``--image IMAGE``: Ray's ``image_uri`` runtime environment (the job and its workers run in that
    container; the nodes need podman). ``image_uri`` admits no ``working_dir``, so the config travels in the
    job's environment (:data:`~.jobspec.CONFIG_ENV`) and the entrypoint is
    ``python -m sentsweep.cli sweep demo.yaml --config-env SENTSWEEP_SWEEP_CONFIG``.

* **The entrypoint**: ``python -m sentsweep.cli sweep configs/<file>``, not the ``sentsweep`` console script,
  which a working-dir copy does not install (``--python`` names another interpreter).
* **The environment**: credentials and endpoints copied from this machine's environment when set
  (:data:`~.credentials.FORWARDED_ENV`: MLflow user, password and token, AWS keys, S3 endpoints, the Hugging
  Face token),
  ``MLFLOW_TRACKING_URI`` for a tracking server, and ``--env NAME[=VALUE]``. Values are never printed or
  logged; summaries name the variables, masked. Anyone who can read the cluster's job API can read a job's
  runtime environment, so on a shared cluster prefer Kubernetes secrets in the pods and ``--no-forward-env``.
* **The storage**: ``--storage`` (``s3://bucket/prefix`` with ``--storage-endpoint-url`` for MinIO, or a path
  on a volume every node mounts) replaces ``storage_path``, so Tune's experiment state outlives the head.
  The job's log names the sweep folder; ``sentsweep submit --resume FOLDER`` continues the sweep in a new job.
"""

from __future__ import annotations
