/**
 * What the failover log tells an operator when an upstream fails: with no other account to try,
 * the request's last failover line says so ("no other account"), rather than leaving "trying
 * another account" as the last word on a request that was answered with the upstream's error.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type LogLine, type SchedulingGateway, startSchedulingGateway } from "../scheduler/gatewayHarness.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv } from "../support/gateway.js"
import { postResponses } from "./helpers.js"

const KEY = "sk-test-openai-0001"

const failoverLines = (logs: ReadonlyArray<LogLine>, requestId: string | null) =>
  logs.filter((l) => l.annotations["request_id"] === requestId && /^upstream fail/.test(l.message))

describe("the failover log of a group with one account", () => {
  let upstream: FakeUpstream
  let gw: SchedulingGateway
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    gw = await startSchedulingGateway({ config: fakeUpstreamConfig(upstream.url), env: fakeUpstreamEnv })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  it("a failure with no other account to try ends its failover lines with 'no other account'", async () => {
    upstream.setFaults([{ _tag: "Status", status: 500 }])
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "the only account fails" })
    expect(res.status).toBe(502)
    const requestId = res.headers.get("x-request-id")
    // Logged on the way to the answer, so already there.
    const last = failoverLines(gw.logs, requestId).at(-1)
    expect(last?.message).toMatch(/no other account/)
    expect(last?.level).toBe("WARN")
    expect(last?.annotations).toMatchObject({ status: 500, code: "upstream_error", attempt: 1 })
  })
})
