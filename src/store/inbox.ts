/**
 * The settlement writer's batching over an Effect `Queue`. The gathering policy is ours (group
 * commit; docs/decisions.md says why not `Queue.takeBetween`): a batch is everything queued, plus what
 * arrives over the next few event-loop turns while items keep coming.
 */
import { Effect, Exit, Queue } from "effect"

/**
 * One event-loop turn: I/O that is ready runs (and so enqueues) before the gathering goes on,
 * which a microtask or a fiber yield would not let happen.
 */
export const nextTurn: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Up to `max` items that are in the queue now, oldest first (none when empty); never waits. */
const takeNow = <A>(queue: Queue.Queue<A>, max: number, into: Array<A>): number => {
  let taken = 0
  while (taken < max) {
    const next = Queue.takeUnsafe(queue)
    if (next === undefined || !Exit.isSuccess(next)) break
    into.push(next.value)
    taken++
  }
  return taken
}

/**
 * Given the `first` items taken, keeps taking what arrives over up to `maxTurns` event-loop turns,
 * stopping after `quietTurns` turns in a row bring nothing or at `max` items. One step per turn.
 * Interrupted while gathering, it puts what it took back in front of the queue (the writer is the
 * queue's only taker), so nothing taken is lost.
 */
export const gatherMore = <A>(
  queue: Queue.Queue<A>,
  first: Iterable<A>,
  max: number,
  maxTurns: number,
  quietTurns: number
): Effect.Effect<Array<A>> => {
  const items: Array<A> = Array.from(first)
  if (maxTurns === 0 || items.length >= max) return Effect.succeed(items)
  let turn = 0
  let quiet = 0
  const onTurn = (): Effect.Effect<Array<A>> => {
    if (takeNow(queue, max - items.length, items) === 0) quiet++
    else quiet = 0
    return ++turn >= maxTurns || quiet >= quietTurns || items.length >= max
      ? Effect.succeed(items)
      : Effect.flatMap(nextTurn, onTurn)
  }
  return Effect.onInterrupt(Effect.flatMap(nextTurn, onTurn), () =>
    Effect.sync(() => {
      const rest: Array<A> = []
      takeNow(queue, Number.POSITIVE_INFINITY, rest)
      Queue.offerAllUnsafe(queue, [...items, ...rest])
    }))
}

/** Waits for a first item, takes what there is (up to `max`), then gathers more (`gatherMore`). */
export const gather = <A>(queue: Queue.Queue<A>, max: number, maxTurns: number, quietTurns: number): Effect.Effect<Array<A>> =>
  Effect.flatMap(Queue.takeBetween(queue, 1, max), (first) => gatherMore(queue, first, max, maxTurns, quietTurns))
