/**
 * The admin docs page (/docs) under its Content-Security-Policy: the header is sent, the page still
 * renders the reference in Chromium with no violation and nothing fetched from another host, and a
 * script that was not ours (injected markup) does not run; its "Test Request" sends the admin
 * token as a bearer token. The OpenAPI document declares that scheme and the package's version.
 * The browser part is skipped without Chromium (as test/browser's), a failure in CI.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { type Browser, chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Backend, sqliteBackend } from "../store/harness.js"
import { ADMIN_TOKEN, type GatewayWithAdmin, startWithAdmin } from "../support/adminGateway.js"

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"
const requireServices = process.env["MODELGATE_REQUIRE_SERVICES"] === "1"

let backend: Backend
let running: GatewayWithAdmin
beforeAll(async () => {
  backend = sqliteBackend()
  running = await startWithAdmin(await backend.fresh())
}, 60_000)
afterAll(async () => {
  await running?.close()
  await backend?.cleanup()
})

/** A CSP header as directive -> sources. */
const directives = (header: string): Map<string, Array<string>> =>
  new Map(header.split(";").map((d) => d.trim().split(/\s+/)).filter((d) => d[0] !== "").map(([name, ...sources]) => [name!, sources]))

describe("/docs", () => {
  it("answers with a Content-Security-Policy that allows scripts from this listener only", async () => {
    const res = await fetch(`${running.admin}/docs`)
    expect(res.status).toBe(200)
    const header = res.headers.get("content-security-policy")
    expect(header).not.toBeNull()
    const policy = directives(header ?? "")
    expect(policy.get("default-src")).toEqual(["'none'"])
    const scripts = policy.get("script-src") ?? []
    expect(scripts).toContain("'self'")
    expect(scripts).not.toContain("'unsafe-inline'")
    expect(scripts).not.toContain("'unsafe-eval'")
    expect(scripts.filter((s) => /^https?:|^\*/.test(s))).toEqual([])
    expect(policy.get("connect-src")).toEqual(["'self'"])
    expect(policy.get("frame-ancestors")).toEqual(["'none'"])
    await res.text()
  })
})

describe("/openapi.json", () => {
  it("declares the admin token as an HTTP bearer scheme (lowercase, as the docs page matches it) on every endpoint", async () => {
    const spec = (await (await fetch(`${running.admin}/openapi.json`)).json()) as {
      components: { securitySchemes: Record<string, unknown> }
      paths: Record<string, Record<string, { security?: Array<Record<string, unknown>> }>>
    }
    expect(spec.components.securitySchemes).toEqual({ adminToken: { type: "http", scheme: "bearer" } })
    const operations = Object.values(spec.paths).flatMap((p) => Object.values(p))
    expect(operations.length).toBeGreaterThan(10)
    for (const op of operations) expect(op.security).toEqual([{ adminToken: [] }])
  })

  it("reports the package's version", async () => {
    const spec = (await (await fetch(`${running.admin}/openapi.json`)).json()) as { info: { version: string } }
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "package.json"), "utf8")) as { version: string }
    expect(spec.info.version).toBe(pkg.version)
  })
})

const withChromium = existsSync(CHROMIUM)
if (!withChromium && requireServices) {
  it(`Chromium is at ${CHROMIUM} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
    expect.fail(`no Chromium at ${CHROMIUM}`)
  })
}

describe.skipIf(!withChromium)("/docs in Chromium", () => {
  let browser: Browser
  beforeAll(async () => {
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
  })

  it("renders the reference with no policy violation, loading nothing from another host", async () => {
    const page = await browser.newPage()
    const elsewhere: Array<string> = []
    page.on("request", (request) => {
      if (!request.url().startsWith(running.admin) && !request.url().startsWith("data:")) elsewhere.push(request.url())
    })
    const violations: Array<string> = []
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text())
    })
    await page.goto(`${running.admin}/docs`)
    // Scalar's reference, drawn from the inline document: the title and an operation of the API.
    await expect.poll(() => page.getByRole("heading", { name: "modelgate admin API" }).first().isVisible(), { timeout: 20_000 }).toBe(true)
    await expect.poll(() => page.getByText("/admin/users/{name}/topup").first().count(), { timeout: 20_000 }).toBeGreaterThan(0)
    expect(violations).toEqual([])
    expect(elsewhere).toEqual([])

    // Markup that made it into the page cannot run a script of its own.
    const ran = await page.evaluate(async () => {
      const w = window as unknown as { injected?: boolean }
      const el = document.createElement("div")
      el.innerHTML = "<img src=x onerror=\"window.injected = true\">"
      document.body.append(el)
      const s = document.createElement("script")
      s.textContent = "window.injected = true"
      document.body.append(s)
      await new Promise((resolve) => setTimeout(resolve, 200))
      return w.injected === true
    })
    expect(ran).toBe(false)
    await page.close()
  }, 60_000)

  it("'Test Request' asks for a bearer token and sends it as Authorization: Bearer, which the API accepts", async () => {
    const page = await browser.newPage()
    const calls: Array<{ authorization: string | undefined; status: number }> = []
    page.on("response", async (response) => {
      if (new URL(response.url()).pathname !== "/admin/users") return
      calls.push({ authorization: (await response.request().allHeaders())["authorization"], status: response.status() })
    })
    await page.goto(`${running.admin}/docs`)
    // The reference's authentication box: one "Token" field (a Basic scheme would ask for a username and password).
    await page.getByPlaceholder("Token").filter({ visible: true }).first().fill(ADMIN_TOKEN, { timeout: 20_000 })
    await page.getByRole("button", { name: /Test Request\s*\(get \/admin\/users\)/ }).first().click()
    await page.getByRole("button", { name: /^Send/ }).first().click()
    await expect.poll(() => calls, { timeout: 20_000 }).toEqual([{ authorization: `Bearer ${ADMIN_TOKEN}`, status: 200 }])
    await page.close()
  }, 60_000)
})
