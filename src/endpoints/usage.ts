/** GET /v1/usage: the calling key's quota, balance and usage; readable by expired and exhausted keys. */
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Clock, Effect } from "effect"
import { InvalidRequest } from "../domain/errors.js"
import { addDays, dayOf, DEFAULT_RANGE_DAYS, parseDay, usageReport } from "../domain/usageReport.js"
import { KeyRepo } from "../services/keyRepo/KeyRepo.js"
import { Quota } from "../services/quota/Quota.js"
import { authenticate } from "./kit/auth.js"
import { json } from "./kit/reply.js"

const dayParam = (params: URLSearchParams, name: string) => {
  const raw = params.get(name)
  if (raw === null || raw === "") return Effect.succeed(undefined)
  const day = parseDay(raw)
  return day === undefined
    ? Effect.fail(new InvalidRequest({ code: "invalid_date", message: `${name} must be a date as YYYY-MM-DD`, param: name }))
    : Effect.succeed(day)
}

/** The handler, with its services resolved once. */
export const makeUsageHandler = Effect.gen(function*() {
  const keys = yield* KeyRepo
  const quota = yield* Quota
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const principal = yield* authenticate(keys, request, { allowExpired: true })
    const params = new URLSearchParams(request.url.split("?")[1] ?? "")
    // "Today" is the Clock's (a test under TestClock can roll the day over).
    const now = new Date(yield* Clock.currentTimeMillis)
    const end = yield* dayParam(params, "end_date")
    const to = end ?? dayOf(now)
    const from = (yield* dayParam(params, "start_date")) ?? addDays(to, -(DEFAULT_RANGE_DAYS - 1))
    if (from > to) {
      return yield* new InvalidRequest({
        code: "invalid_date",
        // Without an end_date the range ends today: say what is wrong with the date given.
        message: end === undefined ? `start_date must not be in the future (today is ${to})` : "start_date must not be after end_date",
        param: "start_date"
      })
    }
    const snapshot = yield* quota.snapshot(principal, { from, to }, now)
    return json(usageReport(snapshot, now))
  })
})
