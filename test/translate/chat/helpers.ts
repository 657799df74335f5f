/**
 * Shared by the Chat translation tests: run a Responses stream through the translator, and the
 * openai SDK as the oracle: its `chat.completions.stream()` reads our frames as SSE off a fetch
 * that answers with them, exactly as it reads a server's.
 */
import OpenAI from "openai"
import { ChatStreamTranslator, type ChatStreamOut, type StreamEnding } from "../../../src/translate/chat/stream.js"

export type Ev = Record<string, unknown>

export const NOW = 1_800_000_000

export const translateChat = (
  events: ReadonlyArray<Ev>,
  opts: { readonly includeUsage?: boolean; readonly ending?: StreamEnding } = {}
): { readonly out: Array<ChatStreamOut>; readonly translator: ChatStreamTranslator } => {
  const translator = new ChatStreamTranslator({ model: "gpt-5.4", includeUsage: opts.includeUsage ?? false, nowSeconds: NOW })
  const out: Array<ChatStreamOut> = []
  for (const event of events) out.push(...translator.step(event))
  out.push(...translator.finish(opts.ending ?? { _tag: "Eof" }))
  return { out, translator }
}

/** Our frames as the door writes them: one `data:` line each, then `[DONE]`. */
export const sseOf = (frames: ReadonlyArray<ChatStreamOut>): string =>
  frames.map((frame) => `data: ${JSON.stringify(frame)}\n\n`).join("") + "data: [DONE]\n\n"

export const clientAnswering = (body: string, contentType = "text/event-stream"): OpenAI =>
  new OpenAI({
    apiKey: "sk-test",
    baseURL: "http://gateway.invalid/v1",
    maxRetries: 0,
    fetch: async () => new Response(body, { status: 200, headers: { "content-type": contentType } })
  })

/** What the SDK's stream helper accumulates from our frames, or what it threw. */
export const sdkFinal = async (frames: ReadonlyArray<ChatStreamOut>) => {
  const stream = clientAnswering(sseOf(frames)).chat.completions.stream({
    model: "gpt-5.4",
    messages: [{ role: "user", content: "hi" }],
    stream_options: { include_usage: true }
  })
  try {
    return { completion: await stream.finalChatCompletion() }
  } catch (error) {
    return { error }
  }
}
