# modelgate's container image (README "Deploy"): built with the full dependencies, run from a
# production tree that has none of the dev ones, on the official Node 24 slim image, as a non-root
# user. The build stage's work is scripts/release/assemble.sh; scripts/release-check.sh (run by
# .ci/run) runs that same script and starts its output as this image's CMD does, then SIGTERMs it.

FROM node:24-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN scripts/release/assemble.sh /app

FROM node:24-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
WORKDIR /app
COPY --from=build --chown=node:node /app /app
# State (the SQLite file, or the settlement journal when DATABASE_URL is PostgreSQL) lives here.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
USER node
EXPOSE 8080
# node is PID 1 (no npm, no shell in between): SIGTERM reaches the gateway, which drains for
# DRAIN_SECONDS. Give `docker stop` more than that (`--time`, compose's stop_grace_period).
STOPSIGNAL SIGTERM
# Node's own fetch: the slim image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=32", "scripts/start.mjs"]
