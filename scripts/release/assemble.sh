#!/usr/bin/env bash
# The production tree: what runs the gateway and the CLI with no dev dependency (README "Deploy").
# Run from a checkout with the dev dependencies installed:
#
#   scripts/release/assemble.sh OUT_DIR
#
# It builds (`npm run build`: the server and CLI bundles in .build/, no tsx or esbuild at run time),
# copies what the bundles need at run time into OUT_DIR and installs only the production
# dependencies there. The Dockerfile runs this same script in its build stage, and
# scripts/release-check.sh (in .ci/run) runs it and starts the result, so what the image does is
# tested on a machine that cannot pull base images.
set -euo pipefail
out="${1:?usage: scripts/release/assemble.sh OUT_DIR}"
cd "$(dirname "$0")/../.."

npm run build --silent
mkdir -p "$out"
# The bundles, their source maps and worker files; the dashboard's files; the launchers; the
# manifest and lock file (npm ci installs from them).
cp -Rp .build ui bin "$out/"
mkdir -p "$out/scripts"
cp -p scripts/start.mjs scripts/bundle.mjs "$out/scripts/"
cp -p package.json package-lock.json "$out/"
if [ -f .npmrc ]; then cp -p .npmrc "$out/"; fi
cp -R examples "$out/"
# Production dependencies only: what the bundles load from node_modules (pg, ioredis, the
# tokenizer's data, uPlot and Scalar's files for the pages). No install script runs: none is needed.
(cd "$out" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
echo "assembled the production tree in $out"
