# Two commands set everything up on a fresh machine:
#   make demo   creates .venv, installs the package, runs the mail-merge DAG on the sample form
#               and rows
#   make test   creates .venv, installs the package and the test tools, runs the linters and the
#               whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The package alone (what `make demo` runs), and the package with the test tools (the [test]
# extra: the S3 and Celery extras, a local S3 server, browsers' driver, linters, scikit-learn).
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# uv (a PyPI package, installed into the venv by its pip) installs in parallel: the whole
# dependency tree in seconds where pip takes minutes. UV_NO_CACHE=1 measures a cold install.
UV := $(VENV)/bin/uv
PIP_INSTALL := $(UV) pip install --quiet --python $(PY)
DEMO_OUT ?= demo-output
DEMO_HOME := $(abspath .airflow-demo)
DEMO_ENV := AIRFLOW_HOME=$(DEMO_HOME) AIRFLOW__CORE__DAGS_FOLDER=$(abspath dags) \
	AIRFLOW__CORE__LOAD_EXAMPLES=False
# The suite runs in two worker processes, each test file whole on one of them (its servers and
# clusters are started once per worker); TEST_WORKERS=0 runs it in one process. Tests marked
# solo measure latency and run alone afterwards, with nothing else on the machine's cores.
TEST_WORKERS ?= 2
PARALLEL := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)
PYTEST := $(PY) -m pytest -q
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed
ANCHOR_VENV := .venv-anchor
ANCHOR_STAMP := $(ANCHOR_VENV)/.installed
ANCHOR_CORPORA ?= dev train
ANCHOR_JOBS ?= 2
ANCHOR_THREADS ?= 1

.PHONY: demo demo-chunks test test-quick test-repeat lint bench bench-anchor install clean \
	train-detector docs-screenshots

# The development environment: the package and the test tools.
install: $(TEST_STAMP)

$(UV):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check uv

$(STAMP): pyproject.toml | $(UV)
	$(PIP_INSTALL) -e .
	rm -rf plugins/*.egg-info  # build leftovers: Airflow would see the plugin's entry point twice
	touch $(STAMP)

# One install for both on a fresh clone; after `make demo`, the test tools on top.
$(TEST_STAMP): pyproject.toml | $(UV)
	$(PIP_INSTALL) -e ".[test]"
	rm -rf plugins/*.egg-info
	touch $(STAMP) $(TEST_STAMP)

demo: $(STAMP)
	rm -rf $(DEMO_OUT)
	mkdir -p $(DEMO_HOME)
	$(DEMO_ENV) $(VENV)/bin/airflow db migrate > $(DEMO_HOME)/migrate.log 2>&1 \
		|| (tail -20 $(DEMO_HOME)/migrate.log; exit 1)
	$(DEMO_ENV) $(VENV)/bin/airflow dags test fillpdf_mail_merge \
		-c '{"output": "$(abspath $(DEMO_OUT))"}' > $(DEMO_HOME)/dag-test.log 2>&1 \
		|| (tail -40 $(DEMO_HOME)/dag-test.log; exit 1)
	@$(MAKE) --no-print-directory demo-chunks
	@echo
	@echo "The fillpdf_mail_merge DAG ran on the embedded engine (log: $(DEMO_HOME)/dag-test.log)."
	@echo "PDFs:     $(abspath $(DEMO_OUT))/"
	@echo "Manifest: $(abspath $(DEMO_OUT))/manifest.parquet"

# The demo run's line per chunk, in chunk order: the mapped chunks run, and log, in any order.
demo-chunks:
	@grep -o "chunk [0-9]* (rows [0-9-]*): filled.*rows/s" $(DEMO_HOME)/dag-test.log \
		| sort -s -k2,2n || true

# ruff on everything; mypy on the package (strict on the engine and the client: pyproject.toml)
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check plugins tests benchmarks include dags kits
	$(VENV)/bin/ruff format --check plugins tests benchmarks include dags kits
	$(VENV)/bin/mypy

test: $(TEST_STAMP) lint
	$(PYTEST) $(PARALLEL) -m "not solo"
	$(PYTEST) -m solo

# The suite N times in a row, as `make test` runs it; names every test that failed in any run
# (a test that fails by timing shows up here before it fails CI). Reports: $(REPEAT_DIR).
N ?= 3
REPEAT_DIR ?= $(abspath .suite-repeat)
test-repeat: $(TEST_STAMP) lint
	rm -rf $(REPEAT_DIR)
	$(PY) -m kits.suite_repeat --runs $(N) --workers $(TEST_WORKERS) --keep $(REPEAT_DIR)

# The quick loop: everything but the system tests that start a whole Celery stack.
test-quick: $(TEST_STAMP) lint
	$(PYTEST) $(PARALLEL) -m "not system"

# The field scorer: rebuilt from ../shared/corpus/train with a fixed seed (the same model,
# byte for byte), cross-validated by form; figures in benchmarks/results/detector_cv.txt.
train-detector: $(STAMP)
	$(PIP_INSTALL) -e ".[train]"
	rm -rf plugins/*.egg-info
	$(PY) benchmarks/train_detector.py

# Benchmarks run in their own environment: the fillers we compare with pin other pypdf versions.
$(BENCH_STAMP): pyproject.toml
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e ".[bench,test]"
	-command -v pdftk >/dev/null || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
		&& apt-get install -y -qq pdftk-java >/dev/null 2>&1)
	-command -v qpdf >/dev/null || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
		&& apt-get install -y -qq qpdf >/dev/null 2>&1)  # wild_eval.py: qpdf --check
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python benchmarks/fill_bench.py

# The anchor: CommonForms' FFDNet-S on the flat copies detect_eval scores, scored by the same
# matching (benchmarks/README.md). commonforms and torch live in their own environment, never
# in the package's; not part of `make test` or CI. Hours on the training corpus: detections
# are cached per form, so an interrupted run resumes. Figures: results/ffdnet_anchor_*.txt.
$(ANCHOR_STAMP): benchmarks/anchor-requirements.txt
	test -x $(ANCHOR_VENV)/bin/python || $(PYTHON) -m venv $(ANCHOR_VENV)
	$(ANCHOR_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		-r benchmarks/anchor-requirements.txt
	touch $(ANCHOR_STAMP)

bench-anchor: $(TEST_STAMP) $(ANCHOR_STAMP)
	for corpus in $(ANCHOR_CORPORA); do \
		$(PY) benchmarks/ffdnet_anchor.py --corpus $$corpus --anchor-python $(ANCHOR_VENV)/bin/python \
			--jobs $(ANCHOR_JOBS) --threads $(ANCHOR_THREADS) || exit 1; \
	done

# The review editor on two development forms, for the README (needs Chromium and ../shared).
docs-screenshots: $(TEST_STAMP)
	$(PY) docs/screenshots.py
	$(PY) -m kits.script_gallery docs/scripts

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(ANCHOR_VENV) $(DEMO_OUT) $(DEMO_HOME) $(REPEAT_DIR) \
		.pytest_cache .ruff_cache
