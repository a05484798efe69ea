#!/bin/bash
# The verifier: the hidden tests (hidden_test.go) decide reward.txt; checks.go writes checks.json, Wrap's
# results on inputs whose answers appear nowhere here, which gym_swe seals against the reference solution's.
# Runs offline from the work dir; builds into a fresh cache, never the agent's.
set -u
logs=/logs/verifier
mkdir -p "$logs"
echo 0 > "$logs/reward.txt"
rm -f "$logs/checks.json"
export GOCACHE=/tmp/verifier-gocache GOPATH=/tmp/verifier-gopath GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
hidden=verifier_hidden
rm -rf "$hidden" && mkdir -p "$hidden/checks"
cp /tests/hidden_test.go "$hidden/hidden_test.go"
cp /tests/checks.go "$hidden/checks/main.go"

reward=0
if go test -vet=off -count=1 "./$hidden/"; then
    reward=1
fi
if ! go run "./$hidden/checks" "$logs/checks.json.tmp"; then
    rm -f "$logs/checks.json.tmp"
fi
[ -f "$logs/checks.json.tmp" ] && mv -f "$logs/checks.json.tmp" "$logs/checks.json"
rm -rf "$hidden"
echo "$reward" > "$logs/reward.txt"
