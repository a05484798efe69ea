#!/bin/bash
# The verifier: the hidden tests (hidden.rs, an integration test) decide reward.txt; checks.rs writes
# checks.json, what Ring holds after operation sequences whose results appear nowhere here, which gym_swe
# seals against the reference solution's. Offline (no dependencies to fetch); builds into a fresh target
# directory, never the agent's.
set -u
logs=/logs/verifier
mkdir -p "$logs"
echo 0 > "$logs/reward.txt"
rm -f "$logs/checks.json"
export CARGO_NET_OFFLINE=true CARGO_TARGET_DIR=/tmp/verifier-target CARGO_TERM_COLOR=never
mkdir -p tests examples
cp /tests/hidden.rs tests/verifier_hidden.rs
cp /tests/checks.rs examples/verifier_checks.rs

reward=0
if cargo test --offline --test verifier_hidden; then
    reward=1
fi
if ! cargo run --offline -q --example verifier_checks -- "$logs/checks.json.tmp"; then
    rm -f "$logs/checks.json.tmp"
fi
[ -f "$logs/checks.json.tmp" ] && mv -f "$logs/checks.json.tmp" "$logs/checks.json"
rm -f tests/verifier_hidden.rs examples/verifier_checks.rs
echo "$reward" > "$logs/reward.txt"
