#!/bin/bash
# docker.sh SET ID...: build gym_swe's task image, then validate in it (one at a time)
set -u
export PATH=/work/wt-s5s/.venv/bin:$PATH
cd /work/scratch-s5s
set_=$1; shift
P=/work/shared/data/swe-bench/SWE-bench_${set_}-test.parquet
for id in "$@"; do
  echo "== $id $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "build %e s" gym-swe images build --tasks $P --repo-source mirrors --task-id $id > out/img-$id.log 2>&1
  echo "build rc=$? $(tail -2 out/img-$id.log | tr '\n' ' ')"
  echo "   validate $(date -u +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "validate %e s" gym-swe validate --env SWEGym-v0 --tasks $P --repo-source mirrors --workers 1 --sandbox docker --image-naming gym-swe --task-id $id --json out/dv-$id.json > out/dval-$id.log 2>&1
  echo "validate rc=$? $(grep -E "^$id|validate [0-9.]+ s" out/dval-$id.log | tr '\n' ' ')"
done
echo "== done $(date -u +%T)"
