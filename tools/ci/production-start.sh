#!/usr/bin/env bash
# The production start path: with devDependencies pruned (`npm ci && npm run build && npm prune --omit=dev`),
# the `console` bin serves from the compiled build. Starts it in an empty folder on a loopback port, waits
# for /readyz and stops it with SIGTERM. Exits non-zero when it does not become ready within 60 s.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PORT=${PORT:-58080}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ ! -e "$ROOT/node_modules/tsx" ] || { echo "production-start: devDependencies are still installed; run npm prune --omit=dev first" >&2; exit 1; }

cd "$work"
SERVER_HOST=127.0.0.1 SERVER_PORT=$PORT node "$ROOT/bin/console.mjs" serve >"$work/out.log" 2>&1 &
pid=$!
for _ in $(seq 240); do
  if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then
    kill -TERM "$pid"
    wait "$pid"
    echo "production-start: ready on :$PORT with devDependencies pruned, stopped cleanly"
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.25
done
kill -TERM "$pid" 2>/dev/null || true
sed -E 's/(password:) *[^ ]+/\1 <hidden>/I' "$work/out.log" >&2
echo "production-start: the service did not become ready" >&2
exit 1
