/**
 * "Before vs after": the gateway's CPU per request against the "before" gateway's (an older commit
 * run beside it, bench/worktree.ts), measured in the same interleaved rounds, so both see the same
 * machine at the same moments. On a shared VM absolute CPU figures drift by 10% from run to run;
 * the ratio of two builds measured side by side is what a refactor is judged by.
 */
import { f, fInt, median, table } from "./report.js"
import type { ScenarioId } from "./harness.js"

/**
 * The most the change may cost: after/before CPU per request. Issue 24 (Effect 4 against the last
 * Effect 3 commit): passthrough JSON at most 0.7x, passthrough SSE at most 0.6x, translated the
 * same or better. Scenarios without one are shown, not judged.
 */
export const BEFORE_AFTER_BUDGETS: Partial<Record<ScenarioId, number>> = {
  "passthrough-json": 0.7,
  "passthrough-sse": 0.6,
  "translated-json": 0.7,
  "translated-sse": 0.6
}

export interface BeforeAfterInput {
  readonly id: ScenarioId
  readonly label: string
  /** CPU µs per request, one figure per round. */
  readonly beforeUs: ReadonlyArray<number>
  readonly afterUs: ReadonlyArray<number>
}

export interface BeforeAfterRow {
  readonly scenario: ScenarioId
  readonly beforeCpuUs: number
  readonly afterCpuUs: number
  /** Median after / median before. */
  readonly ratio: number
  /** after / before within each round (the spread shows how far to trust the ratio). */
  readonly roundRatios: ReadonlyArray<number>
  readonly budget?: number
  readonly pass?: boolean
}

export const beforeAfterRows = (inputs: ReadonlyArray<BeforeAfterInput>): Array<BeforeAfterRow> =>
  inputs.map((x) => {
    const beforeCpuUs = median(x.beforeUs)
    const afterCpuUs = median(x.afterUs)
    const ratio = afterCpuUs / beforeCpuUs
    const budget = BEFORE_AFTER_BUDGETS[x.id]
    return {
      scenario: x.id,
      beforeCpuUs,
      afterCpuUs,
      ratio,
      roundRatios: x.afterUs.map((after, i) => after / (x.beforeUs[i] ?? Number.NaN)),
      ...(budget === undefined ? {} : { budget, pass: ratio <= budget })
    }
  })

export const beforeAfterTable = (rows: ReadonlyArray<BeforeAfterRow>, labels: ReadonlyMap<ScenarioId, string>): string =>
  table(
    ["scenario", "before µs/req", "after µs/req", "after/before", "per round", "budget", ""],
    rows.map((r) => [
      labels.get(r.scenario) ?? r.scenario,
      fInt(r.beforeCpuUs),
      fInt(r.afterCpuUs),
      `${f(r.ratio)}x`,
      r.roundRatios.map((x) => f(x)).join(" "),
      r.budget === undefined ? "" : `<= ${f(r.budget)}x`,
      r.pass === undefined ? "" : r.pass ? "PASS" : "FAIL"
    ])
  )
