export { simulateResponses } from "./responses.js"
export { simulateMessages } from "./messages.js"
export { encodeSseEvent, encodeSseEvents, type SseEncodeOptions } from "./sse.js"
export type { Simulated, SimulateOptions } from "./shared.js"
