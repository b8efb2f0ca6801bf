# The two commands: `make demo` and `make test`. Each bootstraps what it needs.
PYTHON ?= python3
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(PYTHON)
# .pyc files at install: without them `nyla --help` takes ~4x as long on its first runs.
export UV_COMPILE_BYTECODE := 1
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
VENV := .venv
NYLA := $(VENV)/bin/nyla

.PHONY: setup demo serve test lint format bench clean

.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check uv

$(VENV)/.synced: pyproject.toml core/pyproject.toml $(wildcard plugins/*/*/pyproject.toml) $(wildcard hosts/*/pyproject.toml) | $(UV)
	$(UV) sync --all-packages --inexact
	touch $@

# The workspace's own sources are installed editable, so uv compiles none of them: compile them
# here (compileall writes .pyc even where PYTHONDONTWRITEBYTECODE is set), or every `nyla`
# process, the many the tests start included, compiles the kernel and its plugins again.
setup: $(VENV)/.synced
	@$(VENV)/bin/python -m compileall -q -j 0 core/src $(wildcard plugins/*/*/src) $(wildcard hosts/*/src) >/dev/null

demo: setup
	$(VENV)/bin/python -m nyla.demo

# The web host with the scripted demo model: prints a sign-in token for the CLI's user
# ($NYLA_USER, else local: the page and the CLI are one person), then the URL.
serve: setup
	@$(NYLA) tokens create --role sysadmin --name "make serve"
	$(NYLA) serve --demo-model

# The suite runs in TEST_WORKERS processes (pytest-xdist), a test file's tests in one of them
# (its module fixtures are made once); most tests wait on PostgreSQL, Chromium or a `nyla`
# subprocess, so one more worker than cores, at most four. TEST_WORKERS=0 runs in this process.
# The slowest tests are listed at the end, to keep the suite's time in view.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min(4, (os.cpu_count() or 1) + 1))')

test: setup
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25

# ruff, the import contracts (.ci/import_contracts.py), no import circle (.ci/import_graph.py),
# no service reaching a sibling through the kernel object (.ci/service_deps.py), the type
# check (nyla.sdk, nyla.models, jobs, eval, files and tools strictly; the whole kernel, the
# plugins and the hosts as they are written) and the size limits (.ci/sizes.py: modules
# <= 450 lines, functions <= 80)
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/python .ci/import_contracts.py
	$(VENV)/bin/python .ci/import_graph.py --check
	$(VENV)/bin/python .ci/service_deps.py
	$(VENV)/bin/mypy --strict core/src/nyla/sdk core/src/nyla/models core/src/nyla/jobs \
		core/src/nyla/eval core/src/nyla/files core/src/nyla/tools
	$(VENV)/bin/mypy core/src/nyla
	$(VENV)/bin/mypy $(wildcard plugins/*/*/src/*) $(wildcard hosts/*/src/*)
	$(VENV)/bin/python .ci/sizes.py

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: setup
	$(VENV)/bin/python bench/startup.py
	$(VENV)/bin/python bench/host.py

clean:
	rm -rf $(VENV) .tools
