# attnlab: `make demo` and `make test` each set everything up from the lock file, then run.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.attnlab-installed
# Tests pin one BLAS/torch thread per process: on 2-core machines oversubscription made small steps 20-40x
# slower (the dask and pool tests run several processes at once). The demo runs two one-thread runs at a time.
test test-slow lint docs docs-serve: export OMP_NUM_THREADS = 1
test test-slow lint docs docs-serve: export MKL_NUM_THREADS = 1
docs docs-serve: export NO_MKDOCS_2_WARNING = 1
docs docs-serve demo: export MPLBACKEND = Agg

.PHONY: demo venv check check-paper readme test test-slow lint docs docs-serve bench clean chromium

# The sandbox's browser tests drive Debian's Chromium through Playwright (Playwright's own browser download
# cannot work here). As root with apt (CI), a missing one is installed; otherwise those tests say why they skip.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium for the sandbox's browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "note: $(CHROMIUM) is missing and this is not root: the sandbox's browser tests will be skipped"; fi

$(STAMP): requirements.lock pyproject.toml examples/my_study/pyproject.toml tests/knobs_study/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . -e examples/my_study \
	  -e tests/knobs_study
	touch $(STAMP)

# The demo: every study's headline figure at a small size (theory beside simulation), two runs at a time, into its
# own store attnlab-demo/, then the report attnlab-demo.html, opened in a browser where there is a display. Measured:
# 87-100 s of CPU for the whole `make demo` (specialization's run is the longest: 50 s), so a minute or two on 2
# free cores (334 s wall on the 2 cores shared at load 9). The full quick reproduction is `attnlab reproduce --scale quick` (every headline experiment at
# quick scale and every claim). tests/docs/test_demo.py checks that these overrides are valid configs.
DEMO_STORE := attnlab-demo
DEMO_specialization := specialization.fig1 --set n_mc=20000
DEMO_clustering     := clustering.fig1
DEMO_signal         := signal.fig1d --set n_inits=2 --set n_seqs=2
DEMO_paths          := paths.fig2c --set 'widths=[10,50,200,1000,10000]' --set burn_in=300 --set samples=200 --set thin=2
DEMO_potts          := potts.fig3left --set L=100 --set n_real=10 --set 'lams=[0.01]'
DEMO_STUDIES := specialization clustering signal paths potts

demo: $(STAMP)
	@$(MAKE) --no-print-directory -j2 $(addprefix demo-,$(DEMO_STUDIES))
	$(BIN)/attnlab report --all --store $(DEMO_STORE) --html attnlab-demo.html
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ] || [ "$$(uname)" = Darwin ]; then \
	  $(BIN)/python -m webbrowser -t "file://$(CURDIR)/attnlab-demo.html" >/dev/null 2>&1 || true; fi
	@echo "report: $(CURDIR)/attnlab-demo.html"

demo-%:
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/attnlab run $(DEMO_$*) --store $(DEMO_STORE) --quiet

# The setup alone: .venv from requirements.lock, attnlab installed in it.
venv: $(STAMP)

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
	$(BIN)/python -m attnlab.core.bench README.md docs/benchmarks.md

# The docs site (docs/, mkdocs.yml) into site/: warnings are errors (a broken link or reference fails the build);
# it runs examples/gallery/*.py and fills the study pages' generated tables (docs/hooks.py).
docs: $(STAMP)
	rm -rf docs/generated
	$(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	$(BIN)/mkdocs serve

# tests/docs/ opens the site just built in Chromium. The suite runs on one pytest-xdist worker per core
# (TEST_WORKERS=auto; each pinned to one thread): on CI's 2 cores it takes 10 min instead of 17 serially.
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= auto
test: $(STAMP) lint chromium docs
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=30

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples docs/hooks.py

bench: $(STAMP)
	$(BIN)/attnlab bench

clean:
	rm -rf $(VENV) attnlab-runs attnlab-demo attnlab-report.html attnlab-demo.html site docs/generated .pytest_cache \
	  .ruff_cache
