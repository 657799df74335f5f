/**
 * The dashboard's files: ui/ at the package root (plain HTML, CSS and a script module: no build
 * step) and uPlot from node_modules, served under /ui by both listeners, with no CDN. Each file is
 * read on its first request and kept. `mode` says which view the page opens: "key" on the public
 * listener (a key holder's own usage), "admin" on the admin listener (the operator's).
 */
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { FAVICON_HREF } from "./favicon.js"

export type UiMode = "admin" | "key"

/** ui/ beside src/ (source, tests) or beside .build/ (the npm start bundle and its chunks). */
const uiDir = (): string => {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, "ui", "index.html"))) return join(dir, "ui")
    dir = dirname(dir)
  }
  throw new Error("modelgate: the dashboard's files (ui/) are missing from this installation")
}

const uplotDir = () => join(dirname(createRequire(import.meta.url).resolve("uplot/package.json")), "dist")

interface Asset {
  readonly file: () => string
  readonly contentType: string
}

const ASSETS: ReadonlyMap<string, Asset> = new Map([
  ["/ui", { file: () => join(uiDir(), "index.html"), contentType: "text/html; charset=utf-8" }],
  ["/ui/app.js", { file: () => join(uiDir(), "app.js"), contentType: "text/javascript; charset=utf-8" }],
  ["/ui/style.css", { file: () => join(uiDir(), "style.css"), contentType: "text/css; charset=utf-8" }],
  ["/ui/vendor/uPlot.iife.min.js", { file: () => join(uplotDir(), "uPlot.iife.min.js"), contentType: "text/javascript; charset=utf-8" }],
  ["/ui/vendor/uPlot.min.css", { file: () => join(uplotDir(), "uPlot.min.css"), contentType: "text/css; charset=utf-8" }]
])

// The page talks only to its own origin; nothing may frame it (the admin view issues secrets).
const HEADERS = {
  "content-security-policy":
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache"
}

const cache = new Map<string, Uint8Array>()

const body = (mode: UiMode, path: string, asset: Asset): Uint8Array => {
  const key = `${mode}:${path}`
  let bytes = cache.get(key)
  if (bytes === undefined) {
    const raw = readFileSync(asset.file())
    bytes = path === "/ui"
      ? new TextEncoder().encode(raw.toString("utf8").replace("{{MODE}}", mode).replace("{{FAVICON}}", FAVICON_HREF))
      : raw
    cache.set(key, bytes)
  }
  return bytes
}

/** GET /ui and /ui/<file>: the file, or 404 for a name that is not one of the dashboard's. */
export const uiHandler = (mode: UiMode) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const path = (request.url.split("?")[0] ?? "").replace(/\/$/, "")
    const asset = ASSETS.get(path)
    if (asset === undefined) return Effect.succeed(HttpServerResponse.text("Not found", { status: 404 }))
    return Effect.sync(() =>
      HttpServerResponse.uint8Array(body(mode, path, asset), { contentType: asset.contentType, headers: HEADERS })
    )
  })
