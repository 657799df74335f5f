/**
 * The simulator as an Upstream: answers in the real wire format of the account's platform, with no
 * network; text unless the prompt asks for one of the tools (simulator/toolIntent.ts). It is what
 * the demo runs on.
 */
import { Clock, Effect, Stream } from "effect"
import { encodeSseEvents, simulateMessages, simulateResponses } from "./simulator/index.js"
import { type UpstreamShape, wholeBody } from "./Upstream.js"

const encoder = new TextEncoder()

export const simulatorUpstream: UpstreamShape = {
  send: (_account, req) =>
    // `created_at` is the Clock's time, so a gateway on a TestClock answers at the test's time.
    Effect.map(Clock.currentTimeMillis, (now) => {
      const body = JSON.parse(req.body) as Record<string, unknown>
      if (req.path.endsWith("/count_tokens")) {
        // Anthropic's count endpoint: about four characters a token, as the simulator counts usage.
        const json = { input_tokens: Math.max(1, Math.ceil(JSON.stringify(body["messages"] ?? []).length / 4)) }
        return { status: 200, headers: { "content-type": "application/json" }, body: wholeBody(encoder.encode(JSON.stringify(json))) }
      }
      const messages = req.path.endsWith("/messages")
      // Random ids: a client may key what it keeps by them (a response chained by
      // previous_response_id, a tool call's id), so two answers never share one.
      const answer = messages
        ? simulateMessages(body, { randomIds: true })
        : simulateResponses(body, { createdAt: Math.floor(now / 1000), randomIds: true })
      if (!req.stream) {
        return {
          status: 200,
          headers: { "content-type": "application/json" },
          body: wholeBody(encoder.encode(JSON.stringify(answer.json)))
        }
      }
      // One byte array per event, as a real upstream flushes them.
      const frames = answer.events.map((e) => encoder.encode(encodeSseEvents([e], { eventLines: true })))
      return {
        status: 200,
        headers: { "content-type": "text/event-stream" },
        body: Stream.fromArray(frames)
      }
    })
}
