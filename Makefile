# The two commands a fresh machine needs are `make run` and `make test`; see README.md.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# The cargo commands here get the flag cargo-leptos's dev build sets, so that `make dev` and
# the tests share target/debug instead of rebuilding each other's artifacts (a plain `cargo
# test --workspace` works too, in a build of its own; .cargo/config.toml gives every cargo
# command the bundle's name).
DEV_ENV := env RUSTFLAGS="--cfg erase_components"
# Release bundles leave the Markdown renderer out of the first load: it is split into its own
# wasm file, fetched once the page is live (see `app::markdown::render_split`).
SPLIT := --split --lib-features split
# wasm-opt for release builds comes from npm's binaryen in end2end/.
TOOLS_PATH := PATH="$(CURDIR)/end2end/node_modules/.bin:$$PATH"
# The bundle's panic messages name their crates' files from the crate's folder, not from this
# machine's cargo home (shorter, and the same bundle on every machine). Expanded when a
# recipe runs, after setup has fetched the crates.
CARGO_DIR := $(or $(CARGO_HOME),$(HOME)/.cargo)
WASM_FLAGS = CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="$(foreach dir,$(wildcard $(CARGO_DIR)/registry/src/*/),--remap-path-prefix=$(dir)=)"

.PHONY: help setup setup-run run dev test test-servers fmt-check clippy unit pg-unit model-unit wasm-check e2e e2e-build e2e-run

help:
	@echo "make run    install what is missing, build in release mode, serve http://127.0.0.1:3000"
	@echo "make test   install what is missing, then run every check and test"
	@echo "make dev    cargo leptos watch: rebuild and reload the browser on every change"

setup:
	bash scripts/setup.sh test

# Running needs no browser: Chromium is installed for `make test` only.
setup-run:
	bash scripts/setup.sh run

run: setup-run
	$(TOOLS_PATH) $(WASM_FLAGS) LEPTOS_ENV=PROD cargo leptos serve --release $(SPLIT)

dev: setup-run
	cargo leptos watch

# Each stage is timed (scripts/stage.sh); the table of times ends the output, failed or not.
# The stages that need PostgreSQL run inside scripts/with-postgres.sh: a throwaway cluster
# (or the machine's), a database for this run, removed at the end. Those that need a real
# model run inside scripts/with-model.sh: llama.cpp's server with Gemma 3 270M on a free port.
STAGE := bash scripts/stage.sh run
SUB := $(MAKE) --no-print-directory

test:
	@bash scripts/stage.sh reset
	@status=0; \
	{ $(STAGE) setup $(SUB) setup \
	  && $(STAGE) fmt-check $(SUB) fmt-check \
	  && $(STAGE) clippy $(SUB) clippy \
	  && $(STAGE) unit $(SUB) unit \
	  && $(STAGE) wasm-check $(SUB) wasm-check \
	  && bash scripts/with-postgres.sh bash scripts/with-model.sh $(SUB) -j1 test-servers; \
	} || status=$$?; \
	bash scripts/stage.sh table; \
	exit $$status

# What runs beside PostgreSQL and the model server (see `test`).
test-servers:
	$(STAGE) pg-unit $(SUB) pg-unit
	$(STAGE) model-unit $(SUB) model-unit
	$(STAGE) "e2e: release build" $(SUB) e2e-build
	$(STAGE) "e2e: Playwright" $(SUB) e2e-run

fmt-check:
	cargo fmt --all --check

# The anchor's parity tests (differential vectors, scenarios, properties) need its `parity`
# feature; both targets turn it on so that they share one build.
PARITY := --features anchor/parity

clippy:
	$(DEV_ENV) cargo clippy --workspace --all-targets --locked $(PARITY) -- -D warnings

# The packages every cargo test command builds: one selection, so that the stages share one
# build (another selection unifies features differently and compiles crates again).
TEST_PACKAGES := --workspace --locked $(PARITY)

# Everything on SQLite. The tests of several instances sharing PostgreSQL and those against a
# real model are `#[ignore]`d with what they need (plain `cargo test` lists them as ignored);
# pg-unit and model-unit run them.
unit:
	$(DEV_ENV) cargo test $(TEST_PACKAGES)

# The server's integration tests again, on PostgreSQL (ANCHORAGE_TEST_DATABASE_URL, which
# scripts/with-postgres.sh sets), with those of several instances sharing it.
pg-unit:
	@test -n "$${ANCHORAGE_TEST_DATABASE_URL:-}" || { echo "pg-unit: run it as scripts/with-postgres.sh make pg-unit" >&2; exit 2; }
	$(DEV_ENV) cargo test $(TEST_PACKAGES) --test api -- --include-ignored --skip real_model::

# The server's tests against a real model (ANCHORAGE_TEST_LLAMA_URL, which
# scripts/with-model.sh sets), one at a time: the model server answers one request at once.
model-unit:
	@test -n "$${ANCHORAGE_TEST_LLAMA_URL:-}" || { echo "model-unit: run it as scripts/with-model.sh make model-unit" >&2; exit 2; }
	$(DEV_ENV) cargo test $(TEST_PACKAGES) --test api -- --ignored real_model:: --test-threads 1

wasm-check:
	cargo clippy -p anchor -p frontend --target wasm32-unknown-unknown --locked -- -D warnings
	cargo clippy -p anchor -p frontend --target wasm32-unknown-unknown --locked --features frontend/split -- -D warnings

# Builds the release site (wasm-opt included), then runs Playwright (desktop and phone
# projects) against it: three workers, each starting a release server of its own on a fresh
# database with a quick demo agent (end2end/tests/fixtures.ts).
e2e: e2e-build e2e-run

# Skipped when nothing it reads changed since it last ran and its outputs are as it left them
# (scripts/fresh.sh): cargo-leptos would run wasm-bindgen and wasm-opt again for nothing.
E2E_BUILD := cargo leptos build --release --cargo-locked $(SPLIT)
e2e-build:
	@if $(TOOLS_PATH) $(WASM_FLAGS) bash scripts/fresh.sh check release $(E2E_BUILD); then \
	  echo "e2e-build: the release build is that of the sources as they are"; \
	else \
	  $(TOOLS_PATH) $(WASM_FLAGS) $(E2E_BUILD) && $(TOOLS_PATH) $(WASM_FLAGS) bash scripts/fresh.sh save release $(E2E_BUILD); \
	fi

e2e-run:
	rm -f end2end/test-results/results.json
	status=0; (cd end2end && ANCHORAGE_SERVER_BIN=$(CURDIR)/target/release/server npx playwright test) || status=$$?; \
	node end2end/summary.js && exit $$status
