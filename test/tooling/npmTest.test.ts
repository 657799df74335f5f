/**
 * `npm test`'s output: a passing run fits a screen (its summary, and why a suite was skipped),
 * with nothing of what passing tests logged; a failing test is printed in full (the assertion, its
 * diff, where) with what it logged. Runs vitest with the project's settings on fixtures.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = join(import.meta.dirname, "..", "..")

const vitest = (fixture: string) => {
  // Not this run's worker settings; plain text.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && k !== "NODE_OPTIONS"))
  const ran = spawnSync(
    join(ROOT, "node_modules", ".bin", "vitest"),
    ["run", "--config", "test/tooling/fixtures/vitest.config.ts", `test/tooling/fixtures/${fixture}`],
    { cwd: ROOT, env: { ...env, NO_COLOR: "1", FORCE_COLOR: "0" }, encoding: "utf8", timeout: 60_000 }
  )
  return { status: ran.status, output: `${ran.stdout}${ran.stderr}` }
}

describe("npm test's output", () => {
  it("a passing run: the summary and why a suite was skipped, none of what the tests logged", () => {
    const ran = vitest("passing.fixture.ts")
    expect(ran.status, ran.output).toBe(0)
    expect(ran.output).toContain("Tests  20 passed | 1 skipped (21)")
    expect(ran.output).not.toContain("access log line")
    expect(ran.output.match(/no such service here: skipping its suite/g)).toHaveLength(1)
    expect(ran.output.trim().split("\n").length, ran.output).toBeLessThanOrEqual(12)
  }, 70_000)

  it("a failing test in full: the assertion, its diff and source line, and what it logged; not the passing test's log", () => {
    const ran = vitest("failing.fixture.ts")
    expect(ran.status).toBe(1)
    expect(ran.output).toContain("FAIL  test/tooling/fixtures/failing.fixture.ts > fails")
    expect(ran.output).toContain("AssertionError: expected { status: 503")
    // The whole diff, each field.
    expect(ran.output).toMatch(/-\s+"code": "ok",\n-\s+"status": 200,\n\+\s+"code": "store_unavailable",\n\+\s+"status": 503,/)
    expect(ran.output).toContain("failing.fixture.ts:11:")
    expect(ran.output).toContain("access log line of the failing test")
    expect(ran.output).not.toContain("access log line of the passing test")
  }, 70_000)
})
