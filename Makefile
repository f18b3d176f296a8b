# README's two commands: `make demo` and `make test`. Both create .venv when it is missing.
VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.sentsweep-installed
# The offline defaults: no hub traffic, local Ray without token auth.
RUN_ENV := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false RAY_AUTH_MODE=disabled

.PHONY: setup demo test test-all bench lint clean

setup: $(STAMP)

# torch first from its CPU wheel (other versions pull multi-GB CUDA builds), then the project with
# the same pins as constraints.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -c constraints.txt -e '.[offline,dev]'
	touch $(STAMP)

demo: setup
	$(RUN_ENV) $(VENV)/bin/sentsweep evaluate --model minilm --tasks stsb,sickr --pooling mean

test: setup
	$(RUN_ENV) $(VENV)/bin/pytest -q -m "not slow"

test-all: setup
	$(RUN_ENV) $(VENV)/bin/pytest -q

bench: setup
	$(RUN_ENV) $(PY) -m bench.encode

lint: setup
	$(VENV)/bin/ruff check sentsweep tests bench

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
