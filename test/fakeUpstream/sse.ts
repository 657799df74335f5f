/** Test-only SSE helpers: parse frames, and read a streamed body frame by frame until it ends or breaks. */

export interface SseFrame {
  readonly event: string | undefined
  readonly data: string
}

export const parseSseFrames = (text: string): ReadonlyArray<SseFrame> =>
  text
    .split("\n\n")
    .filter((frame) => frame.trim().length > 0)
    .map((frame) => {
      let event: string | undefined
      const data: Array<string> = []
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart())
      }
      return { event, data: data.join("\n") }
    })

export const frameJson = (frame: SseFrame): Record<string, unknown> => JSON.parse(frame.data) as Record<string, unknown>

/** Reads the whole body; returns the complete frames received and the error that ended it, if any. */
export const readSse = async (
  response: Response,
  onFrame?: (frame: SseFrame, index: number) => void
): Promise<{ readonly frames: ReadonlyArray<SseFrame>; readonly error: unknown }> => {
  const body = response.body
  if (body === null) return { frames: [], error: new Error("no body") }
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const frames: Array<SseFrame> = []
  let buffer = ""
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let cut = buffer.indexOf("\n\n")
      while (cut >= 0) {
        const [frame] = parseSseFrames(buffer.slice(0, cut + 2))
        buffer = buffer.slice(cut + 2)
        if (frame !== undefined) {
          frames.push(frame)
          onFrame?.(frame, frames.length - 1)
        }
        cut = buffer.indexOf("\n\n")
      }
    }
    return { frames, error: undefined }
  } catch (error) {
    return { frames, error }
  }
}

export const waitFor = async (check: () => boolean, timeoutMs = 3_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error("waitFor: timed out")
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
