/**
 * `npm test`'s reporter: vitest's "minimal" (a passing run is its summary; a failing test is
 * printed in full, with what it logged), which also prints what a test file says while it is
 * collected, outside any test and hook: why a suite is skipped (no PostgreSQL, Redis or Chromium).
 */
import type { UserConsoleLog } from "vitest"
import { MinimalReporter } from "vitest/node"

export default class QuietReporter extends MinimalReporter {
  /** Printed as they came; a failed file's replay of its logs would repeat them. */
  private readonly shown = new WeakSet<UserConsoleLog>()

  override shouldLog(log: UserConsoleLog, taskState?: Parameters<MinimalReporter["shouldLog"]>[1]): boolean {
    if (this.shown.has(log)) return false
    const task = log.taskId === undefined ? undefined : this.ctx.state.idMap.get(log.taskId)
    // A file that has not started running (no result yet) is being collected: its top-level code speaks.
    if (this.silent !== true && task !== undefined && task === task.file && task.result === undefined) {
      this.shown.add(log)
      return true
    }
    return super.shouldLog(log, taskState)
  }
}
