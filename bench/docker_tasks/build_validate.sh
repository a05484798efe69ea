#!/bin/bash
# usage: build_validate.sh TASKS MIRRORS ID   (one image build, then one docker validate; logs in /work/scratch-s5d/out)
cd /work/scratch-s5d; mkdir -p out
G=/work/wt-s5d/.venv/bin/gym-swe
tasks=$1; mirrors=$2; id=$3
s=$(date +%s); echo "=== $id build start $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> out/times.txt
$G images build --tasks $tasks --repo-source $mirrors --task-id $id > out/b-$id.log 2>&1
rc=$?; echo "$id build rc=$rc $(( $(date +%s) - s ))s load $(cut -d' ' -f1-3 /proc/loadavg)" >> out/times.txt
[ $rc = 0 ] || exit $rc
s=$(date +%s)
$G validate --env SWEGym-v0 --tasks $tasks --repo-source $mirrors --workers 1 --sandbox docker --image-naming gym-swe \
   --task-id $id --json out/dv-$id.json > out/dv-$id.log 2>&1
rc=$?; echo "$id validate rc=$rc $(( $(date +%s) - s ))s load $(cut -d' ' -f1-3 /proc/loadavg)" >> out/times.txt
