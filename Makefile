# attnlab: `make demo` and `make test` each set everything up from the lock file, then run.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.attnlab-installed
# Tests pin one BLAS/torch thread per process: on 2-core machines oversubscription made small steps 20-40x
# slower (the dask and pool tests run several processes at once). The demo runs one process: all cores.
test test-slow lint: export OMP_NUM_THREADS = 1
test test-slow lint: export MKL_NUM_THREADS = 1

.PHONY: demo check check-paper readme test test-slow lint bench clean chromium

# The sandbox's browser tests drive Debian's Chromium through Playwright (Playwright's own browser download
# cannot work here). As root with apt (CI), a missing one is installed; otherwise those tests say why they skip.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium for the sandbox's browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "note: $(CHROMIUM) is missing and this is not root: the sandbox's browser tests will be skipped"; fi

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The demo runs every study's headline experiments (14 min on 2 cores); `make check` measures every paper claim at quick
# scale (about an hour and a half on 2 cores) into the same store, and the report then shows both.
demo: $(STAMP)
	$(BIN)/attnlab reproduce --quick --no-claims --html attnlab-report.html
	@echo "report: $(CURDIR)/attnlab-report.html"

# Both write the committed record results/claims/<scale>/<study>.json and regenerate the README's tables from it.
# DEVICE=cuda (or cuda:N) runs the claims' experiments on a GPU.
DEVICE ?= cpu
check check-paper: SCALE = $(if $(filter check-paper,$@),paper,quick)
check check-paper: $(STAMP)
	$(BIN)/attnlab check --scale $(SCALE) --device $(DEVICE) --record results/claims; status=$$?; \
	$(BIN)/python -m attnlab.core.record README.md; \
	$(BIN)/attnlab report --all --html attnlab-report.html; exit $$status

readme: $(STAMP)
	$(BIN)/python -m attnlab.core.record README.md

test: $(STAMP) lint chromium
	$(BIN)/python -m pytest -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks

bench: $(STAMP)
	$(BIN)/attnlab bench

clean:
	rm -rf $(VENV) attnlab-runs attnlab-report.html .pytest_cache .ruff_cache
