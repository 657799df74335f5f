/**
 * Anthropic SSE events -> Responses stream events, one upstream event at a time.
 *
 * The grammar real clients enforce (reference/protocols.md 0, 1.6, 1.7, 3.4): created and
 * in_progress first; per item added -> parts/deltas -> done; a terminal event whose `output` holds
 * every finished item. Deltas pass through as they arrive. Anything that ends the stream early
 * (an upstream `error` event, a cut connection, a failed upstream Effect) closes what can be
 * closed validly and ends with `response.failed`; a half-built function call is never finished,
 * so no client runs a tool with truncated arguments.
 */
import { Cause, Option, Stream } from "effect"
import type { TokenUsage } from "../domain/usage.js"
import { isRecord } from "./error.js"
import { foldUsage, type ResponseContext } from "./output.js"
import { initialStreamState, Step, type StreamState } from "./streamMachine.js"
import { type StreamEnding, UNFINISHED_MESSAGE } from "./streamEvents.js"
import type { AnthropicStreamEvent, ResponsesStreamEvent } from "./types.js"

export { initialStreamState, type StreamState } from "./streamMachine.js"

/** Usage seen so far (overwritten by each upstream report), for billing a stream that ended early. */
export const streamUsage = (state: StreamState): TokenUsage => state.usage

/** Anthropic error types -> the Responses error codes clients act on (Codex retries server_error). */
const errorCode = (type: unknown, message: string): string => {
  if (type === "rate_limit_error") return "rate_limit_exceeded"
  if (type === "invalid_request_error") return /prompt is too long|context window/i.test(message) ? "context_length_exceeded" : "invalid_prompt"
  return "server_error"
}

export const stepStream = (
  state: StreamState,
  event: AnthropicStreamEvent
): readonly [StreamState, ReadonlyArray<ResponsesStreamEvent>] => {
  if (state.phase === "done") return [state, []]
  const step = new Step(state)
  step.start()
  switch (event.type) {
    case "message_start": {
      const message = event["message"]
      if (isRecord(message)) step.s.usage = foldUsage(step.s.usage, message["usage"])
      break
    }
    case "content_block_start": {
      const block = event["content_block"]
      if (isRecord(block)) step.startBlock(event["index"], block)
      break
    }
    case "content_block_delta": {
      const delta = event["delta"]
      if (isRecord(delta)) step.delta(event["index"], delta)
      break
    }
    case "content_block_stop":
      step.stopBlock(event["index"])
      break
    case "message_delta": {
      const delta = event["delta"]
      if (isRecord(delta) && typeof delta["stop_reason"] === "string") step.s.stopReason = delta["stop_reason"]
      step.s.usage = foldUsage(step.s.usage, event["usage"])
      break
    }
    case "message_stop":
      step.stop()
      break
    case "error": {
      const error = isRecord(event["error"]) ? event["error"] : {}
      const message = typeof error["message"] === "string" && error["message"] !== "" ? error["message"] : "Upstream error"
      step.fail(errorCode(error["type"], message), message)
      break
    }
    default:
      // `ping` and event types Anthropic adds later: nothing for the client.
      break
  }
  return step.result()
}

export type { StreamEnding } from "./streamEvents.js"

const finish = (state: StreamState, ending: StreamEnding): readonly [StreamState, ReadonlyArray<ResponsesStreamEvent>] => {
  if (state.phase === "done") return [state, []]
  const step = new Step(state)
  if (ending._tag === "Eof") step.fail("server_error", UNFINISHED_MESSAGE)
  else step.fail(ending.code, ending.message)
  return step.result()
}

/** The closing events once the upstream is over; nothing if message_stop or an error already ended it. */
export const finishStream = (state: StreamState, ending: StreamEnding): ReadonlyArray<ResponsesStreamEvent> =>
  finish(state, ending)[1]

type Input<E> = { readonly _tag: "Event"; readonly event: AnthropicStreamEvent } | StreamEnding | { readonly _tag: "Error"; readonly error: E }

/**
 * The whole translation as a Stream that never fails: an upstream failure becomes
 * `response.failed` (via `onError`), and a stream that just stops becomes one too.
 */
export const translateStream = <E, R>(
  events: Stream.Stream<AnthropicStreamEvent, E, R>,
  ctx: ResponseContext,
  onError: (e: E) => { code: string; message: string }
): Stream.Stream<ResponsesStreamEvent, never, R> => {
  const inputs: Stream.Stream<Input<E>, never, R> = events.pipe(
    Stream.map((event): Input<E> => ({ _tag: "Event", event })),
    Stream.concat(Stream.succeed<Input<E>>({ _tag: "Eof" })),
    Stream.catchCause((cause) => {
      const failure = Cause.findErrorOption(cause)
      if (Option.isSome(failure)) return Stream.succeed<Input<E>>({ _tag: "Error", error: failure.value })
      if (Cause.hasInterruptsOnly(cause)) return Stream.empty
      return Stream.succeed<Input<E>>({ _tag: "Failed", code: "server_error", message: "The upstream stream failed" })
    })
  )
  return inputs.pipe(
    Stream.mapAccum(() => initialStreamState(ctx), (state, input) => {
      switch (input._tag) {
        case "Event":
          return stepStream(state, input.event)
        case "Error":
          return finish(state, { _tag: "Failed", ...onError(input.error) })
        default:
          return finish(state, input)
      }
    })
  )
}
