#!/usr/bin/env bash
# Whether a build's outputs are those of the sources as they are now, so that `make test` does
# not redo a release build nothing has changed since (cargo would find its crates fresh, but
# cargo-leptos runs wasm-bindgen and wasm-opt again each time: half a minute).
#
#   scripts/fresh.sh check NAME COMMAND...   exits 0 when NAME was last built by the same
#                                             COMMAND, from sources and tools as they are now,
#                                             and its outputs are as that build left them
#   scripts/fresh.sh save NAME COMMAND...    records that, after a build that succeeded
#
# The sources are every file git knows of or would add (tracked or not, ignored ones aside)
# except the end-to-end tests and the Markdown; the tools are rustc, cargo-leptos, wasm-bindgen
# and wasm-opt; the outputs are the server binary and the site, by size and time of change
# (another build writing there, `make dev`'s debug one say, makes the next check fail).
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$#" -ge 3 ] || { echo "usage: scripts/fresh.sh check|save NAME COMMAND..." >&2; exit 2; }
mode=$1
name=$2
shift 2
stamp="target/.fresh-$name"

inputs() {
  printf 'command %s\n' "$*"
  printf 'env RUSTFLAGS=%s LEPTOS_ENV=%s wasm RUSTFLAGS=%s\n' "${RUSTFLAGS:-}" "${LEPTOS_ENV:-}" \
    "${CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS:-}"
  rustc -Vv
  cargo leptos --version 2>/dev/null || true
  wasm-bindgen --version 2>/dev/null || true
  wasm-opt --version 2>/dev/null || true
  git ls-files -z --cached --others --exclude-standard -- . ':!end2end' ':!*.md' \
    | xargs -0 -r sha256sum 2>/dev/null || true
}

outputs() {
  [ -x target/release/server ] && [ -d target/site/pkg ] || return 1
  # The server writes compressed copies of the bundle beside it when it starts (server/src/
  # assets.rs): those are its, not the build's.
  find target/release/server target/site -type f ! -name '*.br' ! -name '*.gz' ! -name '*.tmp' \
    -printf '%p %s %T@\n' | sort
}

case "$mode" in
  check)
    [ -f "$stamp" ] || exit 1
    now=$( { inputs "$@"; echo "--"; outputs; } | sha256sum) || exit 1
    [ "$now" = "$(cat "$stamp")" ]
    ;;
  save)
    { inputs "$@"; echo "--"; outputs; } | sha256sum >"$stamp"
    ;;
  *)
    echo "usage: scripts/fresh.sh check|save NAME COMMAND..." >&2
    exit 2
    ;;
esac
