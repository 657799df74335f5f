export { chatToResponses } from "./request.js"
export { responseToCompletion } from "./response.js"
export { ChatStreamTranslator, type ChatStreamOut, type StreamEnding } from "./stream.js"
export type { ChatChunkOut, ChatCompletionOut, ChatStreamErrorOut } from "./types.js"
