#!/usr/bin/env bash
# Build upstream's kube-apiserver, kube-scheduler, kube-controller-manager and kubectl v1.37.2 (kubectl v1.32 too) and etcd
# v3.7.0 from their Go modules (upstream/go.mod), the oracle (upstream/cmd/oracle: kube-scheduler's scheduler run in
# process on a cluster file) and schedperf (upstream/cmd/schedperf: the same scheduler timed on a
# benchmark workload), into a cache folder git ignores, once per machine; print that folder.
# The reference kubesched is measured against, never part of the product. Needs Go >= 1.26 and the
# Go module proxy. KUBESCHED_UPSTREAM_CACHE overrides where the binaries go.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=v1.37.2
out="${KUBESCHED_UPSTREAM_CACHE:-$root/.cache/upstream}/$version"
if ! command -v go >/dev/null 2>&1; then
  echo "build_upstream: go is not on PATH (Go >= 1.26 builds upstream's binaries)" >&2
  exit 2
fi
mkdir -p "$out"
cd "$root/upstream"
# what `make` stamps into upstream's release binaries (component-base/version, client-go's too)
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
  stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z"
done
build() {  # name, package: built again when the module files or the package's own are newer
  local own=()
  case "$2" in ./*) own=("$root/upstream/${2#./}" "$root/upstream/internal") ;; esac
  if [ -x "$out/$1" ] && [ -z "$(find "$root/upstream/go.mod" "$root/upstream/go.sum" "$root/upstream/tools.go" \
    "${own[@]}" -type f -newer "$out/$1" -print -quit)" ]; then
    return
  fi
  echo "build_upstream: building $1 ($2)" >&2
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w$stamp" -o "$out/$1.tmp" "$2"
  mv "$out/$1.tmp" "$out/$1"
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kubectl k8s.io/kubernetes/cmd/kubectl
build etcd ./cmd/etcd
build oracle ./cmd/oracle
build schedperf ./cmd/schedperf
# kubectl v1.32 (its own module, upstream/kubectl132): what an older client sends, for the tests that
# compare it (kubectl 1.32's `autoscale` writes autoscaling/v1)
old_kubectl=v1.32.13
if [ ! -x "$out/kubectl-1.32" ] || [ -n "$(find "$root/upstream/kubectl132" -type f -newer "$out/kubectl-1.32" -print -quit)" ]; then
  echo "build_upstream: building kubectl-1.32 (k8s.io/kubectl $old_kubectl)" >&2
  old_stamp=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    old_stamp+=" -X $pkg.gitVersion=$old_kubectl -X $pkg.gitMajor=1 -X $pkg.gitMinor=32"
    old_stamp+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z"
  done
  (cd "$root/upstream/kubectl132" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w$old_stamp" \
    -o "$out/kubectl-1.32.tmp" .)
  mv "$out/kubectl-1.32.tmp" "$out/kubectl-1.32"
fi
echo "$out"
