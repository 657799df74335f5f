/** The pure Responses <-> Anthropic Messages translation. */
export * from "./types.js"
export * from "./request.js"
export * from "./response.js"
export * from "./stream.js"
export * from "./reasoning.js"
export { restoreToolName, toolNameMap, upstreamCallId, upstreamToolName } from "./names.js"
export type { Outcome } from "./output.js"
