/**
 * For the tests of a stream that outruns its key's balance: a gateway with no stream overdraft (a
 * stream stops as soon as the balance is spent), a key's balance as /v1/usage reports it, and the
 * JSON events of a streamed body.
 */
import { startFakeUpstream } from "./fakeUpstream.js"
import { fakeUpstreamEnv, startGateway, type TestGateway } from "./gateway.js"
import { assertOpenResponses, eventIssues } from "./openResponses.js"

export interface Sse {
  readonly type: string
  readonly [field: string]: unknown
}

/** The `data:` JSON of each frame of an SSE body; a Responses event is checked against the Open Responses schema. */
export const sseEvents = (text: string): Array<Sse> =>
  text.split("\n\n").filter((f) => f.includes("data: ")).map((f, i) => {
    const event = JSON.parse(f.slice(f.indexOf("data: ") + 6)) as Sse
    if (event.type.startsWith("response.")) assertOpenResponses(eventIssues(event), `SSE event #${i}`)
    return event
  })

/** `config` with the fake upstream's env, and no overdraft allowed to a stream. */
export const startBudgetGateway = (config: unknown): Promise<TestGateway> =>
  startGateway({ config, env: fakeUpstreamEnv, settings: { streamOverdraftMicros: 0 } })

/** The fake upstream sending one event at a time, and a budget gateway on it; closed together. */
export const startSlowBudgetGateway = async (config: (upstreamUrl: string) => unknown) => {
  const upstream = await startFakeUpstream()
  upstream.setFault({ _tag: "SlowEvents", delayMs: 5 })
  const gw = await startBudgetGateway(config(upstream.url))
  return {
    gw,
    close: async () => {
      await gw.close()
      await upstream.close()
    }
  }
}

export const balanceOf = async (gw: TestGateway, key: string): Promise<number> => {
  const res = await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })
  return ((await res.json()) as { balance: number }).balance
}
