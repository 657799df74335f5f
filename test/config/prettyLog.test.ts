/**
 * LOG_FORMAT=pretty: the gateway's log as a person reads it at a terminal, one line per event
 * (its own lines and the access log's alike): time, level, message, key=value pairs; JSON stays
 * the default.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { prettyFromJson } from "../../src/observability/logger.js"
import { cleanEnv, startGateway } from "../cli/processes.js"

const PRETTY = /^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "modelgate-pretty-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const logOf = async (env: Record<string, string>) => {
  const gateway = await startGateway(dir, cleanEnv(env))
  const res = await fetch(`${gateway.base}/v1/responses`, {
    method: "POST",
    headers: { authorization: "Bearer sk-modelgate-demo-0000000000000000", "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-5.4", input: "Hello!" })
  })
  expect(res.status).toBe(200)
  await gateway.stop()
  // The banner is for people in either format; the log is what follows it.
  return gateway.output().split("\n").filter((l) => l !== "" && !l.startsWith(" ") && !l.startsWith("modelgate demo mode"))
}

describe("LOG_FORMAT", () => {
  it("pretty: every line is time, level, message and key=value pairs, the access log's too; no JSON, no colour in a pipe", async () => {
    const lines = await logOf({ LOG_FORMAT: "pretty" })
    expect(lines.length).toBeGreaterThan(2)
    for (const line of lines) expect(line).toMatch(PRETTY)
    expect(lines.join("\n")).not.toMatch(/\u001b\[/)
    expect(lines.some((l) => l.includes(" INFO  modelgate listening address=http://127.0.0.1:"))).toBe(true)
    const request = lines.find((l) => l.includes(" path=/v1/responses "))
    expect(request).toMatch(/ INFO  request request_id=\S+ method=POST path=\/v1\/responses status=200 code=ok duration_ms=\d+ /)
    expect(request).toContain(" key=demo-openai ")
  }, 90_000)

  it("json (the default): one JSON object per line", async () => {
    const lines = await logOf({})
    expect(lines.length).toBeGreaterThan(2)
    for (const line of lines) expect(JSON.parse(line)).toHaveProperty("logLevel")
  }, 90_000)

  it("a line that is not one of the log's JSON lines passes as it is", () => {
    expect(prettyFromJson("plain words\n", false)).toBe("plain words\n")
    expect(prettyFromJson('{"a":1}\n', false)).toBe('{"a":1}\n')
    expect(prettyFromJson('{"message":"x","logLevel":"WARN","timestamp":"2026-01-01T00:00:00.000Z","annotations":{"n":"two words"}}\n', false))
      .toMatch(/^\d\d:\d\d:\d\d\.000 WARN  x n="two words"\n$/)
  })
})
