#!/bin/bash
# one prepare + validate at a time, per instance: run.sh SET ID...
set -u
export PATH=/work/wt-s5s/.venv/bin:$PATH
cd /work/scratch-s5s
set_=$1; shift
P=/work/shared/data/swe-bench/SWE-bench_${set_}-test.parquet
mkdir -p out
for id in "$@"; do
  echo "== $id $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "prepare %e s" gym-swe prepare --tasks $P --repo-source mirrors --task-id $id > out/prep-$id.log 2>&1
  echo "prepare rc=$? $(tail -2 out/prep-$id.log | tr '\n' ' ')"
  echo "   validate $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "validate %e s" gym-swe validate --env SWEGym-v0 --tasks $P --repo-source mirrors --workers 1 --task-id $id --json out/v-$id.json > out/val-$id.log 2>&1
  echo "validate rc=$? $(grep -E "^$id|validate [0-9.]+ s" out/val-$id.log | tr '\n' ' ')"
done
echo "== done $(date -u +%T)"
