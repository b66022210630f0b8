# The two set-up commands of the README: `make demo` (main job) and `make test` (whole suite).
# Both create .venv on first use and install hoibench into it, so a fresh clone needs nothing else.
# `make demo` installs the core package only (what `hoibench demo` imports: no torch, transformers,
# diffusers, trl or datasets); `make test` adds the test extras. Each install has its own stamp,
# remade when pyproject.toml changes: demo then test installs the extras once, test then demo
# installs nothing more (the test install includes the core one).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORE_STAMP := $(VENV)/.installed-core
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test lint bench clean chromium asan docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(CORE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $(CORE_STAMP)

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $(TEST_STAMP) $(CORE_STAMP)

demo: $(CORE_STAMP)
	$(BIN)/hoibench demo --out hoibench-demo

test: $(TEST_STAMP) chromium
	$(BIN)/ruff check src tests perf scripts
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/python -m pytest -q

# The HTML-report tests open the report in headless Chromium (Debian's chromium package); install
# it when missing (as root, or through passwordless sudo), otherwise those tests skip with a reason.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } \
	    || echo "could not install chromium: the HTML render tests will be skipped"; \
	  elif sudo -n true 2>/dev/null; then { sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } \
	    || echo "could not install chromium: the HTML render tests will be skipped"; \
	  else echo "chromium missing and not root: the HTML render tests will be skipped"; fi; }

# The C scanner's tests under AddressSanitizer and UBSan (not part of `make test`: a few minutes):
# _colscan.c built with -fsanitize=address,undefined into a copy of the package in a temporary
# folder, imported from there (PYTHONPATH) with libasan and libubsan preloaded into the Python
# that runs tests/test_colscan.py and tests/test_scan_agreement.py. Any report fails the run.
asan: $(TEST_STAMP)
	@set -e; CC=$${CC:-cc}; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	cp -r src/hoibench "$$dir/"; rm -f "$$dir"/hoibench/formats/_colscan*.so "$$dir"/hoibench/formats/_colscan*.pyd; \
	ext=$$($(BIN)/python -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"); \
	inc=$$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['include'])"); \
	$$CC -shared -fPIC -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
	  -pthread -I"$$inc" src/hoibench/formats/_colscan.c -o "$$dir/hoibench/formats/_colscan$$ext"; \
	export LD_PRELOAD="$$($$CC -print-file-name=libasan.so) $$($$CC -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 PYTHONPATH="$$dir"; \
	$(BIN)/python -c "import sys, hoibench.formats._colscan as c; sys.exit(0 if c.__file__.startswith('$$dir') else 'not the ASan build: ' + c.__file__)"; \
	$(BIN)/python -m pytest -q -s -p no:cacheprovider tests/test_colscan.py tests/test_scan_agreement.py

# The documentation site (mkdocs.yml): warnings (a broken link or anchor, a docstring that cannot be
# rendered) are errors. Writes site/; `make test` runs the same build.
docs: $(TEST_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests perf scripts

# Every benchmark in one run (perf/bench_all.py): writes docs/benchmarks.md, one table of hoibench's
# times against the reference implementations measured in the same run, with the machine it ran on.
# `make bench BENCH_ARGS=--quick` uses smaller inputs. The perf/bench_*.py scripts print more detail.
bench: $(TEST_STAMP)
	$(BIN)/python perf/bench_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) hoibench-demo .pytest_cache .ruff_cache site
