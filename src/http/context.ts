import { Context } from "effect"

/** The id of the request being served: on every response as `x-request-id` and on every log line. */
export class RequestId extends Context.Tag("modelgate/RequestId")<RequestId, string>() {}
