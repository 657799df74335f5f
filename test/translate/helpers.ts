/** Shared helpers for the translation tests. */
import {
  type AnthropicStreamEvent,
  finishStream,
  initialStreamState,
  messageToResponse,
  type ResponseContext,
  type ResponsesStreamEvent,
  stepStream,
  toolNameMap
} from "../../src/translate/index.js"
import { assertOpenResponses, eventIssues, responseIssues } from "../support/openResponses.js"

export const context = (request: Record<string, unknown> = { model: "claude-sonnet-4-5", input: "hi" }): ResponseContext => ({
  responseId: "resp_test0001",
  model: typeof request["model"] === "string" ? request["model"] : "claude-sonnet-4-5",
  createdAt: 1_795_640_788,
  now: () => 1_795_640_790_000,
  request,
  toolNames: toolNameMap(request)
})

/** Drives the state machine over `events`, then ends it the way the pipeline does (Eof). */
export const runStream = (
  events: ReadonlyArray<AnthropicStreamEvent>,
  ctx: ResponseContext = context()
): Array<ResponsesStreamEvent> => {
  let state = initialStreamState(ctx)
  const out: Array<ResponsesStreamEvent> = []
  for (const e of events) {
    const [next, emitted] = stepStream(state, e)
    state = next
    out.push(...emitted)
  }
  out.push(...finishStream(state, { _tag: "Eof" }))
  out.forEach((e, i) => assertOpenResponses(eventIssues(e), `translated event #${i} ${e.type}`))
  return out
}

/** The JSON translation of a Messages answer, checked against the Open Responses schema. */
export const toResponse = (...args: Parameters<typeof messageToResponse>): ReturnType<typeof messageToResponse> => {
  const translated = messageToResponse(...args)
  assertOpenResponses(responseIssues(translated.response), "the translated response")
  return translated
}

export const ofType = (events: ReadonlyArray<ResponsesStreamEvent>, type: string): Array<ResponsesStreamEvent> =>
  events.filter((e) => e.type === type)

export const last = <A>(xs: ReadonlyArray<A>): A => {
  const x = xs[xs.length - 1]
  if (x === undefined) throw new Error("empty list")
  return x
}

/** The `response` of the terminal event. */
export const terminal = (events: ReadonlyArray<ResponsesStreamEvent>): Record<string, unknown> =>
  last(events)["response"] as Record<string, unknown>

export const outputOf = (response: Record<string, unknown>): Array<Record<string, unknown>> =>
  response["output"] as Array<Record<string, unknown>>

/** SSE framing as the gateway sends it, for feeding real clients. */
export const toSse = (events: ReadonlyArray<ResponsesStreamEvent>): string =>
  events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("")
