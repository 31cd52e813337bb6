#!/usr/bin/env bash
# Builds the real kube-apiserver the k8s tests run agentprof against, once per machine:
# k8s.io/kubernetes from the Go module proxy (tests/go/kube-apiserver pins it and its staging
# modules at one release), into target/peers/kube-apiserver; prints its path. A binary built
# from the same go.mod and go.sum is reused (the Go build cache keeps the rest). About 12-27
# minutes of 2 cores the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=tests/go/kube-apiserver
out=target/peers/kube-apiserver
stamp=target/peers/kube-apiserver.stamp
want=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -d' ' -f1)
mkdir -p target/peers
exec 9>target/peers/kube-apiserver.lock
flock 9
if [ -x "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "$PWD/$out"
  exit 0
fi
version=$(sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$mod/go.mod")
minor=$(echo "$version" | cut -d. -f2)
pkg=k8s.io/component-base/version
echo "kube-apiserver.sh: building kube-apiserver $version (cached in $out afterwards)" >&2
(cd "$mod" && go build -p 2 -trimpath \
  -ldflags "-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z" \
  -o "$OLDPWD/$out.tmp" k8s.io/kubernetes/cmd/kube-apiserver) >&2
mv "$out.tmp" "$out"
echo "$want" > "$stamp"
echo "$PWD/$out"
