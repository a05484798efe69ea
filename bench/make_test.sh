#!/usr/bin/env bash
# make test as a new user runs it, timed: a fresh clone of this repository's HEAD into DIR, `time make test`,
# each line of its output stamped with the seconds since the start (LOG), and with --burner one CPU-bound loop
# beside it for the whole run (the "under load" of bench/RESULTS.md's test-suite table).
#   bench/make_test.sh DIR LOG [--burner]
# For a cold run, first remove the caches: rm -rf ~/.cache/pip ~/.cache/gym_swe ~/.npm; docker system prune -af
set -euo pipefail
if [ $# -lt 2 ]; then echo "usage: bench/make_test.sh DIR LOG [--burner]" >&2; exit 2; fi
dir=$1 log=$2 burner=${3:-}
if [ -n "$burner" ] && [ "$burner" != --burner ]; then echo "unknown option $burner (allowed: --burner)" >&2; exit 2; fi
if [ -e "$dir" ]; then echo "$dir exists: give a new directory" >&2; exit 2; fi
git clone -q "$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)" "$dir"
start=$(date +%s)
if [ -n "$burner" ]; then python3 -c "while True: pass" & burner_pid=$!; trap 'kill $burner_pid' EXIT; fi
set +e
(cd "$dir" && time make test) 2>&1 | while IFS= read -r line; do
    printf '%5d %s\n' $(( $(date +%s) - start )) "$line"
done > "$log"
status=${PIPESTATUS[0]}
echo "make test: exit $status after $(( $(date +%s) - start )) s (log: $log)"
exit "$status"
