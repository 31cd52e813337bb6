#!/usr/bin/env bash
# Regenerates completions/ and man/ from the CLI definition (tests fail when they are stale).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
bin=target/debug/agentprof
mkdir -p completions man
rm -f man/*.1
"$bin" man --out man >/dev/null
"$bin" completions bash > completions/agentprof.bash
"$bin" completions zsh > completions/_agentprof
"$bin" completions fish > completions/agentprof.fish
"$bin" completions elvish > completions/agentprof.elv
"$bin" completions powershell > completions/_agentprof.ps1
