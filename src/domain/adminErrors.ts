/**
 * What an operator's request (admin API, CLI) can be refused with, and the envelope of each: the
 * same `{ error: { type, message, code, param } }` body the public API answers with.
 */
import { Schema } from "effect"
import { type Envelope, storeUnavailable } from "./envelope.js"

/** The request is malformed or breaks a rule (an unknown group, a negative quota...). */
export class AdminInvalid extends Schema.TaggedError<AdminInvalid>()("AdminInvalid", {
  message: Schema.String,
  code: Schema.String,
  param: Schema.NullOr(Schema.String)
}) {}

/** The user, key, group or account named does not exist (or was deleted). */
export class AdminNotFound extends Schema.TaggedError<AdminNotFound>()("AdminNotFound", {
  message: Schema.String,
  code: Schema.String
}) {}

/** The change collides with what exists: a name taken, a key already in that state. */
export class AdminConflict extends Schema.TaggedError<AdminConflict>()("AdminConflict", {
  message: Schema.String,
  code: Schema.String
}) {}

/** No admin token, or the wrong one. */
export class AdminUnauthorized extends Schema.TaggedError<AdminUnauthorized>()("AdminUnauthorized", {
  message: Schema.String
}) {}

export type AdminError = AdminInvalid | AdminNotFound | AdminConflict | AdminUnauthorized

/** An admin failure as a value or in its encoded form (the fields are the same). */
export type AdminFailure =
  | { readonly _tag: "AdminInvalid"; readonly message: string; readonly code: string; readonly param: string | null }
  | { readonly _tag: "AdminNotFound"; readonly message: string; readonly code: string }
  | { readonly _tag: "AdminConflict"; readonly message: string; readonly code: string }
  | { readonly _tag: "AdminUnauthorized"; readonly message: string }
  | { readonly _tag: "StoreError" }

export const adminEnvelope = (e: AdminFailure): Envelope => {
  switch (e._tag) {
    case "AdminInvalid":
      return { status: 400, type: "invalid_request_error", code: e.code, message: e.message, param: e.param }
    case "AdminNotFound":
      return { status: 404, type: "not_found_error", code: e.code, message: e.message, param: null }
    case "AdminConflict":
      return { status: 409, type: "invalid_request_error", code: e.code, message: e.message, param: null }
    case "AdminUnauthorized":
      return { status: 401, type: "authentication_error", code: "invalid_admin_token", message: e.message, param: null }
    case "StoreError":
      return storeUnavailable
  }
}
