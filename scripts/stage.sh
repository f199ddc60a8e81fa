#!/usr/bin/env bash
# Times the stages of a test run, so that a slow one shows in every log:
#
#   scripts/stage.sh run NAME COMMAND [ARGS...]   runs COMMAND, adds "NAME<TAB>seconds<TAB>status"
#                                                  to the run's table, and exits with its status
#                                                  (a NAME starting with a space is a part of the
#                                                  stage before it, not counted again in the total)
#   scripts/stage.sh reset                         starts a new table
#   scripts/stage.sh table                         prints the table (and the total)
#
# The table is target/stages.tsv (STAGES_FILE chooses another).
set -uo pipefail
cd "$(dirname "$0")/.."

FILE=${STAGES_FILE:-target/stages.tsv}

case "${1:-}" in
  reset)
    mkdir -p "$(dirname "$FILE")"
    : >"$FILE"
    ;;
  run)
    [ "$#" -ge 3 ] || { echo "usage: scripts/stage.sh run NAME COMMAND [ARGS...]" >&2; exit 2; }
    name=$2
    shift 2
    mkdir -p "$(dirname "$FILE")"
    start=$(date +%s)
    "$@"
    status=$?
    printf '%s\t%s\t%s\n' "$name" "$(($(date +%s) - start))" "$status" >>"$FILE"
    exit "$status"
    ;;
  table)
    [ -s "$FILE" ] || exit 0
    echo
    echo "stage                              time     result"
    echo "---------------------------------  -------  ------"
    total=0
    while IFS=$'\t' read -r name secs status; do
      case "$name" in
        " "*) ;;
        *) total=$((total + secs)) ;;
      esac
      result=ok
      [ "$status" = 0 ] || result="failed ($status)"
      printf '%-33s  %3dm%02ds  %s\n' "$name" $((secs / 60)) $((secs % 60)) "$result"
    done <"$FILE"
    printf '%-33s  %3dm%02ds\n' "total" $((total / 60)) $((total % 60))
    ;;
  *)
    echo "usage: scripts/stage.sh reset | run NAME COMMAND [ARGS...] | table" >&2
    exit 2
    ;;
esac
