# memsync: `make demo` shows it working, `make test` proves it. Both bootstrap what they need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
GEN    := tests/agentdb_gen
V139   := tests/agentdb_variants/v139
V3     := tests/agentdb_variants/v3alpha
MCPC   := tests/mcp_client
# Convex's npm project sits at the root (its CLI wants package.json beside convex.json).
CONVEX := node_modules/.stamp-node
NPM    := npm --no-audit --no-fund --loglevel=error
# better-sqlite3 (agentdb 1.3.9, the WAL writer) builds from source against the local Node headers.
NODEDIR := $(shell [ -d /usr/include/node ] && echo /usr || dirname $$(dirname $$(command -v node)))

.PHONY: all bootstrap node check lint typecheck test test-unit test-e2e demo bench docs screenshots clean

all: test

# The lock is complete (every package, pinned and hashed), so pip installs it without resolving
# (--no-deps): what gets installed is the lock and nothing else, whatever pip the machine's venv
# carries (an old pip resolves the extras a locked package asks for against the newest release
# and refuses it in --require-hashes mode) and whatever was published since. `pip check` then
# proves the lock was complete.
$(BIN)/.stamp-python: pyproject.toml requirements/dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memsync needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --require-hashes -r requirements/dev.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/pip check --disable-pip-version-check
	@touch $@

# requirements/constraints.txt: the lock's pins without hashes, for installing memsync as a tool
# (README, Install). tests/unit/test_lock.py fails when it and the lock disagree.
.PHONY: constraints
constraints:
	$(PYTHON) tests/lockfile.py requirements/dev.txt > requirements/constraints.txt

# The real agentdb package, for the tests' AgentDB files and the demo's live agents.
# --ignore-scripts: sharp's install script downloads a binary; nothing here uses sharp.
$(GEN)/node_modules/.stamp-node: $(GEN)/package-lock.json
	@node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || { echo "memsync needs node >= 20"; exit 1; }
	cd $(GEN) && $(NPM) ci --ignore-scripts --omit=optional
	@touch $@

$(V139)/node_modules/.stamp-node: $(V139)/package-lock.json
	cd $(V139) && $(NPM) ci --ignore-scripts --omit=optional
	cd $(V139) && npm_config_nodedir=$(NODEDIR) $(NPM) rebuild better-sqlite3
	@touch $@

# npm ci refuses this lock (agentdb 3.0.0-alpha names platform packages that were never
# published); npm install from the same lock resolves the same tree and leaves it unchanged.
$(V3)/node_modules/.stamp-node: $(V3)/package-lock.json
	cd $(V3) && $(NPM) install --ignore-scripts --omit=optional
	@touch $@

# The official MCP TypeScript SDK: a client no one here wrote, driving `memsync mcp` in the tests.
$(MCPC)/node_modules/.stamp-node: $(MCPC)/package-lock.json
	cd $(MCPC) && $(NPM) ci --ignore-scripts
	@touch $@

# convex, convex-test and vitest: for cloud_functions' tests and the local Convex the Python tests use.
$(CONVEX): package.json package-lock.json
	$(NPM) ci
	@touch $@

bootstrap: $(BIN)/.stamp-python
node: $(GEN)/node_modules/.stamp-node $(V139)/node_modules/.stamp-node $(V3)/node_modules/.stamp-node $(MCPC)/node_modules/.stamp-node $(CONVEX)

lint: bootstrap
	$(BIN)/ruff check daemon sync tests bench
	$(BIN)/ruff format --check daemon sync tests bench

typecheck: bootstrap $(CONVEX)
	$(BIN)/mypy
	npx --no-install tsc --noEmit -p cloud_functions

check: lint typecheck

# systemd-analyze: tests/e2e/test_service.py checks the rendered units with `systemd-analyze verify`.
# It comes with Debian's systemd package; installed here when we are root with apt-get, else named.
.PHONY: tools
tools:
	@command -v systemd-analyze >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" -eq 0 ]; then \
	    echo "installing systemd-analyze (Debian package: systemd)"; \
	    apt-get install -y --no-install-recommends systemd || \
	      { apt-get update && apt-get install -y --no-install-recommends systemd; }; \
	  else \
	    echo "make test needs systemd-analyze: install the systemd package (Debian/Ubuntu: sudo apt-get install systemd)"; \
	    exit 1; \
	  fi; }
	@# The web viewer's browser test (tests/e2e/test_viewer_browser.py) drives Debian's headless
	@# chromium through chromedriver; without them it is skipped, saying so.
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" -eq 0 ]; then \
	    echo "installing chromium and chromium-driver (Debian packages) for the viewer's browser test"; \
	    apt-get install -y --no-install-recommends chromium chromium-driver || \
	      { apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver; }; \
	  else \
	    echo "the viewer's browser test will be skipped: install chromium and chromium-driver (Debian/Ubuntu: sudo apt-get install chromium chromium-driver)"; \
	  fi; }

# The tiers (CONTRIBUTING.md): tests/unit and tests/contracts run in this one process (no node, no
# child process), tests/conformance and tests/e2e need `make node`. PYTEST_WORKERS: pytest-xdist's
# -n, two workers by default (this machine has two cores); 0 runs in one process. --dist loadfile
# keeps each file's tests, and its module fixtures, on one worker.
PYTEST_WORKERS ?= 2
PYTEST := $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile

test: bootstrap node check tools
	npm test --silent
	$(PYTEST)

# The inner loop leaves out the few pure tests marked slow (over ten seconds each); make test runs them.
test-unit: bootstrap
	$(PYTEST) -m "not slow" tests/unit tests/contracts

test-e2e: bootstrap node tools
	$(PYTEST) tests/conformance tests/e2e

demo: bootstrap $(GEN)/node_modules/.stamp-node
	$(BIN)/memsync demo

# The references written from the code (tests/test_docs_reference.py fails when they drift) and the
# benchmarks' figures from bench/figures.json (tests/test_benchmark_figures.py).
docs: bootstrap
	$(BIN)/memsync docs commands > docs/reference/commands.md.new
	mv docs/reference/commands.md.new docs/reference/commands.md
	$(BIN)/memsync docs configuration > docs/reference/configuration.md.new
	mv docs/reference/configuration.md.new docs/reference/configuration.md
	$(BIN)/python -m bench.figures

# The viewer's screenshots in docs/images, taken by its browser test against real daemons.
screenshots: bootstrap $(GEN)/node_modules/.stamp-node tools
	VIEWER_SCREENSHOTS=docs/images $(BIN)/pytest -n 0 -p no:randomly tests/e2e/test_viewer_browser.py

bench: bootstrap $(GEN)/node_modules/.stamp-node $(CONVEX)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) node_modules $(MCPC)/node_modules $(GEN)/node_modules $(V139)/node_modules $(V3)/node_modules .mypy_cache .ruff_cache .pytest_cache
