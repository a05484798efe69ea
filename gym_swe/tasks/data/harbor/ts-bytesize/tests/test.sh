#!/bin/bash
# The verifier: compiles the work dir's TypeScript with tsc into a fresh directory; the hidden tests
# (hidden.test.cjs, node's test runner) decide reward.txt; checks.cjs writes checks.json, formatBytes'
# results on sizes whose answers appear nowhere here, which gym_swe seals against the reference solution's.
# Offline: tsc and node come with the image.
set -u
logs=/logs/verifier
mkdir -p "$logs"
echo 0 > "$logs/reward.txt"
rm -f "$logs/checks.json"
build=/tmp/verifier-build
rm -rf "$build" && mkdir -p "$build"
cp /tests/hidden.test.cjs /tests/checks.cjs "$build/"

# A type error fails the build's exit status but tsc still writes JavaScript; the tests judge that.
tsc -p . --outDir "$build/dist" || echo "tsc reported errors"
reward=0
if node --test "$build/hidden.test.cjs"; then
    reward=1
fi
if ! node "$build/checks.cjs" "$logs/checks.json.tmp"; then
    rm -f "$logs/checks.json.tmp"
fi
[ -f "$logs/checks.json.tmp" ] && mv -f "$logs/checks.json.tmp" "$logs/checks.json"
echo "$reward" > "$logs/reward.txt"
