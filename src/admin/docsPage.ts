/**
 * The docs page: Scalar's API reference over the admin API's OpenAPI document. The platform's
 * HttpApiScalar layer inlines Scalar's 3.4 MB script into the module graph, so every gateway
 * would carry it (about 20 MB of idle RSS); here the script is read from @effect/platform's
 * install on the first request for it, and served as a file of its own.
 */
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import { Effect } from "effect"
import { AdminApi } from "./AdminApi.js"

/** JSON that cannot close the <script> element it sits in. */
const scriptJson = (value: unknown): string =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")

const escapeHtml = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

const page = (): string => {
  const spec = OpenApi.fromApi(AdminApi)
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(spec.info.title)}</title>
</head>
<body>
  <script id="api-reference" type="application/json">${scriptJson(spec)}</script>
  <script>document.getElementById("api-reference").dataset.configuration = JSON.stringify({ _integration: "html" })</script>
  <script src="/docs/scalar.js"></script>
</body>
</html>`
}

/**
 * Scalar's standalone script as @effect/platform ships it (a module that only exports the text;
 * it imports nothing, so loading it beside the bundle adds no second copy of anything).
 */
const loadScalar = (): Promise<string> => {
  const platform = dirname(createRequire(import.meta.url).resolve("@effect/platform/package.json"))
  const file = pathToFileURL(join(platform, "dist", "esm", "internal", "httpApiScalar.js")).href
  return import(/* @vite-ignore */ file).then((m: { readonly javascript: string }) => m.javascript)
}

let html: string | undefined
let script: Promise<string> | undefined

export const docsHtml = Effect.sync(() => HttpServerResponse.html((html ??= page())))

export const docsScript = Effect.promise(() => (script ??= loadScalar())).pipe(
  Effect.map((text) =>
    HttpServerResponse.text(text, {
      contentType: "text/javascript; charset=utf-8",
      headers: { "cache-control": "public, max-age=86400" }
    })
  )
)
