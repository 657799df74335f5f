export { responsesToChat, type ChatTranslateOptions } from "./request.js"
export { completionToResponse } from "./response.js"
export { endChatStream, initialChatStreamState, stepChatStream, type ChatStreamEnding, type ChatStreamState } from "./stream.js"
