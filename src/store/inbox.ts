/**
 * The settlement writer's inbox and its gathering, with as few Effect steps as a batch allows: on
 * an idle gateway every request is a batch of its own, and the writer's scaffolding (an Effect
 * Queue, a step per gathering turn) allocated about 47 KB per batch, more than the request's own
 * garbage (docs/performance.md, "Decisions and why").
 */
import { Effect } from "effect"

export class Inbox<A> {
  private items: Array<A> = []
  private wake: (() => void) | undefined

  readonly offer = (item: A): void => {
    this.items.push(item)
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  /** Up to `max` items, oldest first (none when empty). */
  take(max: number): Array<A> {
    if (this.items.length <= max) {
      const all = this.items
      this.items = []
      return all
    }
    return this.items.splice(0, max)
  }

  /** Resolves once there is something to take; at once if there is. */
  readonly waitForItems: Effect.Effect<void> = Effect.callback<void>((resume) => {
    if (this.items.length > 0) return resume(Effect.void)
    this.wake = () => resume(Effect.void)
    return Effect.sync(() => {
      this.wake = undefined
    })
  })

  /**
   * Takes what there is, then keeps taking what arrives over up to `maxTurns` event-loop turns
   * (a turn lets pending I/O run, and so enqueue, unlike a microtask), stopping after `quietTurns`
   * turns in a row bring nothing or at `max` items. One async step, whatever the turns.
   */
  gather(max: number, maxTurns: number, quietTurns: number): Effect.Effect<Array<A>> {
    return Effect.callback<Array<A>>((resume) => {
      const items = this.take(max)
      let turn = 0
      let quiet = 0
      let handle: NodeJS.Immediate | undefined
      const onTurn = () => {
        const more = this.take(max - items.length)
        if (more.length === 0) quiet++
        else {
          quiet = 0
          for (const item of more) items.push(item)
        }
        if (++turn >= maxTurns || quiet >= quietTurns || items.length >= max) resume(Effect.succeed(items))
        else handle = setImmediate(onTurn)
      }
      if (maxTurns === 0 || items.length >= max) return resume(Effect.succeed(items))
      handle = setImmediate(onTurn)
      // Interrupted while gathering: what it took goes back to the front of the inbox.
      return Effect.sync(() => {
        clearImmediate(handle)
        this.items = [...items, ...this.items]
      })
    })
  }
}
