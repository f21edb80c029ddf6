# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
KB := $(VENV)/bin/kb

.PHONY: install browser demo test test-fast lint docs bench schemas clean

# the ONNX export of the embedding model and the Chinese dictionary's indexes, made once per user
# (kbtool/search/onnx_export.py, seconds of torch; kbtool/search/translation.py, ~1 s), so that the first
# search on a fresh clone does not wait for them; a no-op once made
install: $(VENV)/.installed
	@$(PY) -m kbtool.search.onnx_export || echo "kb: no ONNX export made; the first search makes it"
	@$(PY) -m kbtool.search.translation || echo "kb: the dictionary's indexes were not cached; the first search makes them"

# torch first, pinned to the CPU build, so sentence-transformers does not pull a CUDA one
$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e '.[semantic,mcp,plot,ui,test,lint]'
	touch $@

# the web view's browser tests drive Debian's chromium through Playwright (nothing downloads a browser);
# install it when it is missing and apt can (as root, as on CI); elsewhere those tests skip, and say so
browser:
	@test -x /usr/bin/chromium || ! command -v apt-get >/dev/null || [ "$$(id -u)" != 0 ] || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null || \
		(apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null)

demo: install
	$(KB) --kb . search "NVFP4 MoE decode"

test: install browser
	$(PY) -m pytest -q

# the fast suite: tests/unit and tests/integration (in this process, no kb processes), under a minute here;
# `make test` runs every folder (tests/process: kb as users run it; tests/browser: the web view in chromium)
test-fast: install
	$(PY) -m pytest -q tests/unit tests/integration

# ruff (lint and format) and mypy, with the versions pyproject.toml pins; CI runs this too
LINTED := kbtool migrations tests bench gates
lint: install
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy
	$(VENV)/bin/cog --check $(GENERATED)
	$(PY) -c "from kbtool.surfaces.docs import refresh_kb_skill; assert refresh_kb_skill('skills/kb/SKILL.md', check=True), 'run make docs'"

# the generated parts of docs/ (through cog: the CLI reference from --help, the card kinds and lint classes, the
# layout of the code from kbtool/layout.py's map)
# and the kb skill's kinds table, made from the CLI, the vocabulary and the card models (kbtool/surfaces/docs.py)
GENERATED := docs/cli.md docs/concepts.md docs/development.md kbtool/surfaces/daemon/search_command.py
docs: install
	$(VENV)/bin/cog -r $(GENERATED)
	$(PY) -c "from kbtool.surfaces.docs import refresh_kb_skill; refresh_kb_skill('skills/kb/SKILL.md')"

bench: install
	$(PY) bench/bench_store.py
	$(PY) bench/bench_search.py
	$(PY) bench/bench_first_search.py
	$(PY) bench/bench_reads.py
	$(PY) bench/bench_mcp.py
	$(PY) bench/bench_answer_budgets.py
	$(PY) bench/bench_skills.py
	$(PY) bench/bench_reuse.py
	$(PY) bench/bench_compare.py
	$(PY) bench/bench_embedding_backends.py
	$(PY) bench/bench_quality.py --split test
	$(PY) bench/bench_reliability.py --kills 60
	$(PY) bench/bench_team_server.py
	$(PY) bench/bench_hostile_values.py
	$(PY) bench/bench_signals.py --each 6

schemas: install
	$(KB) --kb . schema export

clean:
	rm -rf $(VENV) .kb .pytest_cache
