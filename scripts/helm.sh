#!/usr/bin/env bash
# Builds Helm v4 (helm.sh/helm/v4/cmd/helm, pinned in tests/go/helm) once per machine, into
# target/peers/helm, for the chart's tests; prints its path. A binary built from the same
# go.mod and go.sum is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=tests/go/helm
out=target/peers/helm
stamp=target/peers/helm.stamp
want=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -d' ' -f1)
mkdir -p target/peers
exec 9>target/peers/helm.lock
flock 9
if [ -x "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "$PWD/$out"
  exit 0
fi
echo "helm.sh: building helm (cached in $out afterwards)" >&2
(cd "$mod" && go build -p 2 -trimpath -ldflags "-s -w" -o "$OLDPWD/$out.tmp" helm.sh/helm/v4/cmd/helm) >&2
mv "$out.tmp" "$out"
echo "$want" > "$stamp"
echo "$PWD/$out"
