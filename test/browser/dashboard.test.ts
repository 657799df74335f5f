/**
 * The dashboard driven as a person would, in headless Chromium (Debian's `chromium`, driven by
 * playwright-core; `.ci/run` installs it): an operator signs in, issues a key, sees its request
 * and cost appear, disables it and the next request is refused; a key holder signs in and sees
 * their own usage only; every view is laid out right on a phone, a tablet and a desktop. Skipped
 * with a warning without Chromium, a failure in CI. Screenshots of every view at every width go to
 * $TMPDIR/modelgate-screenshots/ (to look at when a layout check fails); UPDATE_SCREENSHOTS=1 also
 * writes the 1280 px views the README shows to docs/screenshots/.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Result } from "effect"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseDatabaseUrl } from "../../src/store/target.js"
import { ADMIN_TOKEN, type GatewayWithAdmin, startWithAdmin, respond } from "../support/adminGateway.js"
import { favicon, foreignLoads, hiddenSeries, misplacedCardValues, overflowing } from "./layout.js"

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"
const requireServices = process.env["MODELGATE_REQUIRE_SERVICES"] === "1"
const README_SHOTS = process.env["UPDATE_SCREENSHOTS"] === "1" ? join(import.meta.dirname, "..", "..", "docs", "screenshots") : undefined
const SHOTS = join(tmpdir(), "modelgate-screenshots")
const WIDTHS = [375, 768, 1280] as const
const README_WIDTH = 1280
const README_VIEWS = new Set(["admin-overview", "admin-keys", "key-holder"])

/** A screenshot of the whole page as `view` at `width`; the README's views at its width when asked to. */
const shot = async (page: Page, view: string, width: number) => {
  mkdirSync(SHOTS, { recursive: true })
  const image = await page.screenshot({ path: join(SHOTS, `${view}-${width}.png`), fullPage: true })
  if (README_SHOTS !== undefined && width === README_WIDTH && README_VIEWS.has(view)) writeFileSync(join(README_SHOTS, `${view}.png`), image)
}

/** Everything a person would see wrong on the page as it is now (see layout.ts). */
const layout = async (page: Page) => [...await overflowing(page), ...await misplacedCardValues(page)]

/** Nothing on the page is wider than the window (no sideways scrolling of the page itself). */
const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)

if (existsSync(CHROMIUM)) {
  describe("the dashboard in Chromium", () => {
    let browser: Browser
    let running: GatewayWithAdmin
    let dir: string
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "modelgate-ui-"))
      const target = parseDatabaseUrl(`sqlite:${join(dir, "ui.db")}`)
      if (Result.isFailure(target)) throw new Error(target.failure)
      running = await startWithAdmin({ target: target.success })
      // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] })
    }, 60_000)
    afterAll(async () => {
      await browser?.close()
      await running?.close()
      rmSync(dir, { recursive: true, force: true })
    })

    it("an operator issues a key, sees its request and cost, disables it, and the next request is refused", async () => {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
      await page.goto(`${running.admin}/ui`)
      await page.getByLabel("Admin token").fill(ADMIN_TOKEN)
      await page.getByRole("button", { name: "Sign in" }).click()
      await expect.poll(() => page.getByRole("heading", { name: "Operator" }).isVisible()).toBe(true)
      // The token is not in the URL, and not in localStorage.
      expect(page.url()).not.toContain(ADMIN_TOKEN)
      expect(await page.evaluate(() => JSON.stringify(window.localStorage))).not.toContain(ADMIN_TOKEN)

      await page.getByRole("button", { name: "Keys" }).click()
      await page.getByLabel("User").selectOption("erin")
      await page.getByLabel("Group").selectOption("oa")
      await page.getByLabel("Name (optional)").fill("browser-key")
      await page.getByRole("button", { name: "Issue key" }).click()
      const secretBox = page.getByRole("alert")
      await expect.poll(() => secretBox.isVisible()).toBe(true)
      const secret = (await page.locator("#secret-value").textContent()) ?? ""
      expect(secret).toMatch(/^sk-mg-/)
      await page.getByRole("button", { name: "Done" }).click()
      expect(await page.locator("#secret-value").textContent()).toBe("")

      expect(await respond(running.gateway, secret)).toBe(200)

      // The request and its cost appear in the overview.
      await page.getByRole("button", { name: "Overview" }).click()
      const topKeys = page.locator("#top-keys")
      await expect.poll(() => topKeys.textContent(), { timeout: 5_000 }).toContain("browser-key")
      const row = topKeys.locator("tr", { hasText: "browser-key" })
      expect(await row.locator("td").nth(1).textContent()).toBe("1")
      expect(await row.locator("td").nth(2).textContent()).toMatch(/^\$0\.\d*[1-9]/)

      // The upstream accounts and their health.
      await page.getByRole("button", { name: "Accounts" }).click()
      await expect.poll(() => page.locator("#accounts").textContent()).toContain("sim-oa")
      expect(await page.locator("#accounts tr", { hasText: "sim-oa" }).locator("td").nth(4).textContent()).toBe("ok")

      await page.getByRole("button", { name: "Keys" }).click()
      await page.getByRole("button", { name: "Disable browser-key" }).click()
      await expect.poll(() => page.getByRole("status").textContent()).toContain("Key browser-key disabled.")
      expect(await respond(running.gateway, secret)).toBe(401)
      await page.close()
    })

    it("an operator sees the prompt-cache hit ratio per key and per account", async () => {
      const admin = (path: string, body?: unknown) =>
        fetch(`${running.admin}${path}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        }).then((r) => r.json() as Promise<unknown>)
      const issued = await admin("/admin/keys", { user: "erin", group: "an", name: "cache-key" }) as { key: string }
      // Two turns of one conversation, translated to the Anthropic account: the translation marks
      // its prefix for the prompt cache, and the (simulated) provider reads the instructions from it.
      const instructions = "You are a careful assistant. ".repeat(40)
      for (const input of ["First question.", "Second question."]) {
        const res = await fetch(`${running.gateway}/v1/responses`, {
          method: "POST",
          headers: { authorization: `Bearer ${issued.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "claude-sonnet-4-6", instructions, input })
        })
        await res.text()
        expect(res.status).toBe(200)
      }
      const percent = (r: number) => `${Math.floor(r * 1000) / 10}%`
      const today = new Date().toISOString().slice(0, 10)
      const usage = await admin(`/admin/usage?by=key&start_date=${today}&end_date=${today}`) as {
        rows: Array<{ bucket: string; input_tokens: number; cache_read_tokens: number }>
      }
      const keyRow = usage.rows.find((r) => r.bucket === "cache-key")
      expect(keyRow?.cache_read_tokens).toBeGreaterThan(0)
      const keyRatio = (keyRow?.cache_read_tokens ?? 0) / (keyRow?.input_tokens ?? 1)
      expect(keyRatio).toBeGreaterThan(0.5)

      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
      await page.goto(`${running.admin}/ui`)
      await page.getByLabel("Admin token").fill(ADMIN_TOKEN)
      await page.getByRole("button", { name: "Sign in" }).click()
      const topKeys = page.locator("#top-keys")
      await expect.poll(() => topKeys.textContent(), { timeout: 5_000 }).toContain("cache-key")
      expect(await topKeys.locator("th").nth(3).textContent()).toBe("Cache hit")
      expect(await topKeys.locator("tr", { hasText: "cache-key" }).locator("td").nth(3).textContent()).toBe(percent(keyRatio))
      // A key whose provider read nothing from a cache shows 0%.
      expect(await topKeys.locator("tr", { hasText: "browser-key" }).locator("td").nth(3).textContent()).toBe("0%")

      await page.getByRole("button", { name: "Accounts" }).click()
      const accounts = page.locator("#accounts")
      await expect.poll(() => accounts.textContent()).toContain("sim-an")
      expect(await accounts.locator("th").nth(5).textContent()).toBe("Cache hit")
      const anRow = accounts.locator("tr", { hasText: "sim-an" }).locator("td").nth(5)
      // The account served only this key's two requests (the store's figures, by account).
      expect(await anRow.textContent()).toBe(`${percent(keyRatio)} of ${keyRow?.input_tokens} tokens`)
      const byAccount = await admin(`/admin/usage?by=account&start_date=${today}&end_date=${today}`) as {
        rows: Array<{ bucket: string; input_tokens: number; cache_read_tokens: number }>
      }
      expect(byAccount.rows.find((r) => r.bucket === "sim-an")).toMatchObject({
        input_tokens: keyRow?.input_tokens,
        cache_read_tokens: keyRow?.cache_read_tokens
      })
      await page.close()
    })

    it("a key holder sees their own usage and nothing of anyone else's, also on a phone-width screen", async () => {
      // Two keys of the same user: the holder of one sees only that one's requests.
      expect(await respond(running.gateway, "sk-admin-config-key-0001", "gpt-5.4-mini")).toBe(200)
      expect(await respond(running.gateway, "sk-admin-config-key-0001", "gpt-5.4-mini")).toBe(200)
      const other = await fetch(`${running.admin}/admin/keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ user: "erin", group: "oa", name: "someone-else" })
      }).then((r) => r.json() as Promise<{ key: string }>)
      expect(await respond(running.gateway, other.key, "gpt-5.4")).toBe(200)

      const page = await browser.newPage({ viewport: { width: 375, height: 800 } })
      await page.goto(`${running.gateway}/ui`)
      await page.getByLabel("API key").fill("sk-admin-config-key-0001")
      await page.getByRole("button", { name: "Sign in" }).click()
      await expect.poll(() => page.getByRole("heading", { name: "Your usage" }).isVisible()).toBe(true)
      const models = page.locator("#key-models")
      await expect.poll(() => models.textContent()).toContain("gpt-5.4-mini")
      const rows = await models.locator("tbody tr").allTextContents()
      expect(rows).toHaveLength(1) // gpt-5.4 was someone else's key
      expect(await models.locator("tbody tr td").nth(1).textContent()).toBe("2")
      expect(await page.locator("#key-cards").textContent()).toContain("2 requests")
      // Their own prompt-cache hit ratio (the simulated OpenAI account reads nothing from a cache).
      expect(await page.locator("#key-cards").textContent()).toContain("Cache hit0%")
      expect(await fitsWidth(page)).toBe(true)

      // A wrong key is told so, in words, and stays signed out.
      await page.getByRole("button", { name: "Sign out" }).click()
      await page.getByLabel("API key").fill("sk-not-a-key-at-all-000")
      await page.getByRole("button", { name: "Sign in" }).click()
      await expect.poll(() => page.getByRole("status").textContent()).toContain("Sign-in failed")
      expect(await page.getByRole("heading", { name: "Your usage" }).isVisible()).toBe(false)
      await page.close()
    })

    it("every view fits a phone, a tablet and a desktop: nothing cut off, values under their labels, every chart line visible", async () => {
      const post = (path: string, body: unknown) =>
        fetch(`${running.admin}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then((r) => r.json() as Promise<{ id: string; key: string }>)
      // Keys as an operator names them, and one with no name (its id is generated): usage on both,
      // so the charts have a spend and a request count to draw.
      const named = await post("/admin/keys", { user: "erin", group: "oa", name: "analytics-nightly-batch" })
      const unnamed = await post("/admin/keys", { user: "erin", group: "oa" })
      for (const key of [named.key, named.key, unnamed.key]) expect(await respond(running.gateway, key)).toBe(200)

      // Every problem at every width, so one run shows them all.
      const found: Array<string> = []
      const note = (where: string, problems: ReadonlyArray<string>) => found.push(...problems.map((p) => `${where}: ${p}`))
      for (const width of WIDTHS) {
        const admin = await browser.newPage({ viewport: { width, height: 900 } })
        await admin.goto(`${running.admin}/ui`)
        await admin.getByLabel("Admin token").fill(ADMIN_TOKEN)
        await admin.getByRole("button", { name: "Sign in" }).click()
        await expect.poll(() => admin.locator("#top-keys").textContent()).toContain(named.id)
        note(`overview at ${width} px`, await layout(admin))
        note(`overview charts at ${width} px`, await hiddenSeries(admin))
        await shot(admin, "admin-overview", width)

        await admin.getByRole("button", { name: "Keys" }).click()
        await expect.poll(() => admin.locator("#keys").textContent()).toContain(unnamed.id)
        note(`keys at ${width} px`, await layout(admin))
        await shot(admin, "admin-keys", width)

        await admin.getByRole("button", { name: "Users" }).click()
        await expect.poll(() => admin.locator("#users").textContent()).toContain("erin")
        note(`users at ${width} px`, await layout(admin))

        await admin.getByRole("button", { name: "Accounts" }).click()
        await expect.poll(() => admin.locator("#accounts").textContent()).toContain("sim-oa")
        note(`accounts at ${width} px`, await layout(admin))
        await shot(admin, "admin-accounts", width)
        await admin.close()

        const holder = await browser.newPage({ viewport: { width, height: 900 } })
        await holder.goto(`${running.gateway}/ui`)
        await holder.getByLabel("API key").fill(named.key)
        await holder.getByRole("button", { name: "Sign in" }).click()
        await expect.poll(() => holder.locator("#key-models").textContent()).toContain("gpt-5.4")
        expect(await holder.locator("#key-cards").textContent()).toContain("2 requests")
        note(`key holder at ${width} px`, await layout(holder))
        note(`key holder chart at ${width} px`, await hiddenSeries(holder))
        await shot(holder, "key-holder", width)
        await holder.close()
      }
      expect(found).toEqual([])
    }, 60_000)

    it("the dashboards and the admin docs page load nothing from another host, and have an icon", async () => {
      for (const url of [`${running.gateway}/ui`, `${running.admin}/ui`, `${running.admin}/docs`]) {
        const page = await browser.newPage()
        expect(await foreignLoads(page, url), url).toEqual([])
        expect(await favicon(page), url).toMatch(/^data:image\/svg\+xml,/)
        await page.close()
      }
      // The docs page is Scalar's, drawn from the OpenAPI document: it did render.
      const docs = await browser.newPage()
      await docs.goto(`${running.admin}/docs`)
      await expect.poll(() => docs.getByText("/admin/keys").first().isVisible()).toBe(true)
      await docs.close()
    })
  })
} else if (requireServices) {
  describe("the dashboard in Chromium", () => {
    it(`Chromium is installed at ${CHROMIUM} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`)
    })
  })
} else {
  console.warn(`No Chromium at ${CHROMIUM}: skipping the dashboard's browser tests (apt-get install -y chromium, or set CHROMIUM_PATH)`)
  describe.skip(`the dashboard in Chromium (skipped: no Chromium at ${CHROMIUM})`, () => {
    it("drives the dashboard", () => undefined)
  })
}
