#!/usr/bin/env bash
# Builds a real kube-apiserver and etcd from the Go module proxy, once per
# machine, into $K8S_TOOLS (default $HOME/.cache/goreka-k8s/v1.37.2). The
# Kubernetes bridge's tests (kubernetes/, interop/) run them; nothing here is
# committed or vendored. First run ~15 minutes on 2 cores, later runs nothing.
# Prints the directory holding bin/kube-apiserver and bin/etcd.
set -euo pipefail
K8S_VERSION="${K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.7.3}"
K8S_TOOLS="${K8S_TOOLS:-$HOME/.cache/goreka-k8s/v$K8S_VERSION}"
# etcd's version is kept beside it (the directory names Kubernetes' only).
have() { [ -x "$K8S_TOOLS/bin/kube-apiserver" ] && [ -x "$K8S_TOOLS/bin/etcd" ] &&
  [ "$(cat "$K8S_TOOLS/bin/etcd.version" 2>/dev/null)" = "$ETCD_VERSION" ]; }
if have; then
  echo "$K8S_TOOLS"; exit 0
fi
mkdir -p "$K8S_TOOLS/bin"
# One build at a time per machine (two CI runs on a fresh machine would
# write the same files); the second finds the binaries when it gets the lock.
exec 9>"$K8S_TOOLS/.lock"
flock 9
if have; then
  echo "$K8S_TOOLS"; exit 0
fi
minor="0.${K8S_VERSION#1.}"
build() { # dir module-lines main-package output [ldflags]
  local dir="$1"; shift
  mkdir -p "$dir"; (
    cd "$dir"
    printf 'module goreka.local/k8s-tools\n\ngo 1.26\n' > go.mod
    printf 'package tools\n\nimport _ "%s"\n' "$2" > tools.go
    printf '%s\n' "$1" >> go.mod
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
    # Built beside its name and moved: an interrupted build leaves no
    # partial binary that a later run would take for a built one.
    GOFLAGS=-mod=mod go build -trimpath ${4:+-ldflags "$4"} -o "$3.tmp" "$2"
    mv -f "$3.tmp" "$3"
  )
}
if [ ! -x "$K8S_TOOLS/bin/etcd" ] || [ "$(cat "$K8S_TOOLS/bin/etcd.version" 2>/dev/null)" != "$ETCD_VERSION" ]; then
  rm -rf "$K8S_TOOLS/src-etcd"
  build "$K8S_TOOLS/src-etcd" "require go.etcd.io/etcd/server/v3 v$ETCD_VERSION" \
    go.etcd.io/etcd/server/v3 "$K8S_TOOLS/bin/etcd" >&2
  echo "$ETCD_VERSION" > "$K8S_TOOLS/bin/etcd.version"
fi
if [ ! -x "$K8S_TOOLS/bin/kube-apiserver" ]; then
  staging="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
    cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
    cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
    kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
    mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming"
  lines="require k8s.io/kubernetes v$K8S_VERSION"
  for m in $staging; do lines="$lines
replace k8s.io/$m => k8s.io/$m v$minor"; done
  build "$K8S_TOOLS/src-apiserver" "$lines" k8s.io/kubernetes/cmd/kube-apiserver \
    "$K8S_TOOLS/bin/kube-apiserver" "-X k8s.io/component-base/version.gitVersion=v$K8S_VERSION" >&2
fi
echo "$K8S_TOOLS"
