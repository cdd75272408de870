# Two commands set everything up on a fresh machine:
#   make demo   creates .venv, installs, fills the sample form for every sample row
#   make test   creates .venv, installs, runs the linter and the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_OUT ?= demo-output
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed

.PHONY: demo test lint bench install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	rm -rf $(DEMO_OUT)
	$(VENV)/bin/fillpdf batch include/sample_form.pdf include/sample_rows.csv \
		--out-dir $(DEMO_OUT) --name-template "{row}-{full_name}.pdf"
	@echo
	@echo "PDFs:     $(abspath $(DEMO_OUT))/"
	@echo "Manifest: $(abspath $(DEMO_OUT))/manifest.parquet"

lint: $(STAMP)
	$(VENV)/bin/ruff check plugins tests benchmarks include

test: $(STAMP) lint
	$(PY) -m pytest -q

# Benchmarks run in their own environment: the fillers we compare with pin other pypdf versions.
$(BENCH_STAMP): pyproject.toml
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e ".[bench,test]"
	-command -v pdftk >/dev/null || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
		&& apt-get install -y -qq pdftk-java >/dev/null 2>&1)
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python benchmarks/fill_bench.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
