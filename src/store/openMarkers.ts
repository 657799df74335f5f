/**
 * Drops the open-request markers (usage_open) of requests whose settlement has since been written
 * by a replay of the settlement journal (services/quota/journaled.ts): the live settle that would
 * have closed them failed, and a marker left behind is reported as an unsettled request.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { orStoreError } from "./rows.js"

const CHUNK = 100

export const closeOpenMarkers = (requestIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (let i = 0; i < requestIds.length; i += CHUNK) {
      yield* sql`DELETE FROM usage_open WHERE request_id IN ${sql.in(requestIds.slice(i, i + CHUNK))}`
    }
  }).pipe(orStoreError("closing replayed requests' open markers failed"))
