#!/usr/bin/env bash
# Build upstream's scheduler_perf benchmark binaries (k8s.io/kubernetes v1.37.2's
# test/integration/scheduler_perf/<dir>: kube-apiserver and etcd in process, the real scheduler)
# for the directories given (default: misc), beside the binaries scripts/build_upstream.sh builds,
# once per machine; print that folder. benchmarks/side_by_side.py runs them. Each takes minutes to
# compile; none is needed by the test suite.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(bash "$root/scripts/build_upstream.sh")"
cd "$root/upstream"
for dir in "${@:-misc}"; do
  name="scheduler_perf_${dir//\//_}.test"
  if [ -x "$out/$name" ] && [ -z "$(find go.mod go.sum -newer "$out/$name" -print -quit)" ]; then
    continue
  fi
  echo "build_upstream_perf: building $name (test/integration/scheduler_perf/$dir)" >&2
  GOFLAGS=-mod=mod CGO_ENABLED=0 go test -c -o "$out/$name.tmp" \
    "k8s.io/kubernetes/test/integration/scheduler_perf/$dir"
  mv "$out/$name.tmp" "$out/$name"
done
echo "$out"
