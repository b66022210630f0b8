# The two set-up commands of the README: `make demo` (main job) and `make test` (whole suite).
# Both create .venv on first use and install hoibench into it, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/hoibench demo --out hoibench-demo

test: $(STAMP) chromium
	$(BIN)/ruff check src tests perf scripts
	$(BIN)/lint-imports
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

lint: $(STAMP)
	$(BIN)/ruff check src tests perf scripts

bench: $(STAMP)
	for f in perf/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) hoibench-demo .pytest_cache .ruff_cache
