#!/usr/bin/env bash
# What README "Deploy" promises, run end to end (from .ci/run): build, assemble the production tree
# with no dev dependency (scripts/release/assemble.sh, the script the Dockerfile's build stage runs),
# then start it on the project's Node 24 the two ways an operator does (`npm start` under a process
# manager, `node scripts/start.mjs` as the container's PID 1), serve a request, run the CLI, and
# send SIGTERM: the gateway drains and exits 0, saying it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# The Node 24 the container's base image has; here, the one `npm ci` installed.
node24="$(npm exec -c 'node -p process.execPath')"
mkdir -p "$work/bin"
ln -s "$node24" "$work/bin/node"
export PATH="$work/bin:$PATH"
echo "== release check on node $(node --version)"

scripts/release/assemble.sh "$work/app" >/dev/null
app="$work/app"
for dev in esbuild tsx typescript vitest node openai; do
  if [ -e "$app/node_modules/$dev" ]; then echo "the production tree has the dev dependency $dev" >&2; exit 1; fi
done
[ -f "$app/.build/main.mjs" ] && [ -f "$app/.build/cli.mjs" ] || { echo "no bundles in the production tree" >&2; exit 1; }
echo "== production tree: $(du -sh "$app" | cut -f1), node_modules $(du -sh "$app/node_modules" | cut -f1)"

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
KEY=sk-modelgate-demo-0000000000000000

# Starts the tree with the given command line, serves one request, SIGTERMs the started pid.
check_start() {
  local label="$1"; shift
  local port log pid rc
  port="$(free_port)"
  log="$work/$label.log"
  (cd "$app" && exec env PORT="$port" DATABASE_URL="$work/$label.db" SETTLEMENT_JOURNAL_PATH="$work/$label.journal" "$@") >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "$label: the gateway exited at start" >&2; exit 1; }
    sleep 0.2
  done
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$log" >&2; echo "$label: /readyz never answered" >&2; exit 1; }
  local answer
  answer="$(curl -s "http://127.0.0.1:$port/v1/responses" -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' -d '{"model":"gpt-5.4","input":"Hello!"}')"
  case "$answer" in *'"status":"completed"'*) ;; *) echo "$label: unexpected answer: $answer" >&2; exit 1 ;; esac
  kill -TERM "$pid"
  rc=0; wait "$pid" || rc=$?
  [ "$rc" = 0 ] || { cat "$log" >&2; echo "$label: exited $rc after SIGTERM" >&2; exit 1; }
  grep -q '"message":"modelgate stopped"' "$log" || { cat "$log" >&2; echo "$label: no 'modelgate stopped' line" >&2; exit 1; }
  if pgrep -f "$app/scripts/start.mjs" >/dev/null || pgrep -f "scripts/start.mjs.*$port" >/dev/null; then
    echo "$label: a gateway process outlived SIGTERM" >&2; exit 1
  fi
  echo "== $label: served, drained on SIGTERM, exit 0"
}

check_start npm-start npm start --silent
check_start container-cmd node --max-semi-space-size=32 scripts/start.mjs

# The CLI from the production tree (its bundle, no esbuild).
(cd "$app" && DATABASE_URL="$work/cli.db" node bin/modelgate.js help >/dev/null) || { echo "the CLI does not run from the production tree" >&2; exit 1; }
echo "== CLI runs from the production tree"
