/**
 * Work that follows an answer (the settlement), in the request's Scope.
 */
import { Context, Effect, Scope } from "effect"

/**
 * Runs `effect` once the request's answer is written (or the client left): it is a finalizer of the
 * request's Scope, which the server closes after the response, so the client does not wait for it
 * and no path (success, failure, hang-up, shutdown) skips it. Used for settlement.
 */
export const afterAnswer = (effect: Effect.Effect<void>): Effect.Effect<void, never, Scope.Scope> =>
  // Runs in the request's context (its id, facts, log annotations, span), as Effect.addFinalizer
  // would; but that merges the captured context into the closing fiber's, a copy of every service
  // of the app per finalizer. The request's context already holds all of them (it was built on the
  // server's), so it replaces the closing fiber's as it is: no copy.
  Effect.flatMap(Effect.context<Scope.Scope>(), (context) =>
    Scope.addFinalizer(Context.get(context, Scope.Scope), Effect.updateContext(effect, () => context)))
