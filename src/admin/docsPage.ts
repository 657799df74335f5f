/**
 * The docs page: Scalar's API reference over the admin API's OpenAPI document, with nothing
 * loaded from another host (Scalar's default fonts are off). effect's HttpApiScalar layer inlines
 * Scalar's 3.2 MB script into the page and, through its import, into the module graph (a bundle
 * would carry it: about 20 MB of idle RSS for every gateway); here the same script is read from
 * effect's install on the first request for it, and served as a file of its own (/docs/scalar.js).
 */
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { type HttpApiScalar, OpenApi } from "effect/http-api"
import { FAVICON_HREF } from "../ui/favicon.js"
import { AdminApi } from "./AdminApi.js"

/** JSON that cannot close the <script> element it sits in. */
const scriptJson = (value: unknown): string =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")

const escapeHtml = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/**
 * No fonts from Scalar's CDN: the page loads only from this listener. Its "test request" asks
 * for the admin token (bearer).
 */
const scalarConfig: HttpApiScalar.ScalarConfig & { readonly _integration: "html" } = {
  _integration: "html",
  withDefaultFonts: false,
  authentication: { preferredSecurityScheme: "adminToken" }
}

/**
 * The OpenAPI document, every schema inline: the default extracts the error classes'
 * envelopes into components, and a reader of one operation would not see the envelope.
 */
const inline: OpenApi.FromApiOptions = { referencePolicy: () => undefined }
export const openApiDocument = (): OpenApi.OpenAPISpec => OpenApi.fromApi(AdminApi, inline)

let spec: string | undefined

/** GET /openapi.json */
export const openApiJson = Effect.sync(() =>
  HttpServerResponse.text((spec ??= JSON.stringify(openApiDocument())), { contentType: "application/json" })
)

/** The page's one inline script: Scalar over the document, inline so the page needs no second request. */
const initScript = (spec: OpenApi.OpenAPISpec): string => `
    window.Scalar.createApiReference(document.getElementById("api-reference-container"), {
      ...${scriptJson(scalarConfig)},
      content: ${scriptJson(spec)}
    })
  `

/**
 * What the page may load and run: scripts from this listener and the one inline script above (by
 * its hash), so markup that slipped into the document (a description) cannot run a script; Scalar's
 * styles, which it injects inline; fonts and images from here or data: URLs (the tab icon is one);
 * "test request" calls to this listener only. Nothing from another host.
 */
const contentSecurityPolicy = (script: string): string =>
  [
    "default-src 'none'",
    `script-src 'self' 'sha256-${createHash("sha256").update(script).digest("base64")}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; ")

const page = (): { readonly html: string; readonly csp: string } => {
  const spec = openApiDocument()
  const script = initScript(spec)
  const html = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(spec.info.title)}</title>
  <link rel="icon" href="${FAVICON_HREF}">
</head>
<body>
  <div id="api-reference-container"></div>
  <script src="/docs/scalar.js"></script>
  <script>${script}</script>
</body>
</html>`
  return { html, csp: contentSecurityPolicy(script) }
}

/**
 * Scalar's standalone script as effect ships it for HttpApiScalar (a module that only exports
 * the text; it imports nothing, so loading it beside the bundle adds no second copy of anything).
 */
const loadScalar = (): Promise<string> => {
  const effect = dirname(createRequire(import.meta.url).resolve("effect/package.json"))
  const file = pathToFileURL(join(effect, "dist", "http-api", "internal", "httpApiScalar.js")).href
  return import(/* @vite-ignore */ file).then((m: { readonly javascript: string }) => m.javascript)
}

let built: { readonly html: string; readonly csp: string } | undefined
let script: Promise<string> | undefined

export const docsHtml = Effect.sync(() => {
  const { csp, html } = (built ??= page())
  return HttpServerResponse.setHeader(HttpServerResponse.html(html), "content-security-policy", csp)
})

export const docsScript = Effect.promise(() => (script ??= loadScalar())).pipe(
  Effect.map((text) =>
    HttpServerResponse.text(text, {
      contentType: "text/javascript; charset=utf-8",
      headers: { "cache-control": "public, max-age=86400" }
    })
  )
)
