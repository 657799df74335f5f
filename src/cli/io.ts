/**
 * Where the CLI's lines go: an Effect Console over two line writers (stdout and stderr in the
 * process, arrays in tests), so effect/cli's help and the commands' output are captured alike.
 */
import type { Console } from "effect"

export type Print = (line: string) => void

export interface CliIo {
  readonly out: Print
  readonly err: Print
  /** Whether `out` is a terminal that shows colours (help is plain text otherwise). */
  readonly colors?: boolean
}

const text = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? a : String(a))).join(" ")

export const consoleOf = (io: CliIo): Console.Console => {
  const out = (...args: ReadonlyArray<unknown>) => io.out(text(args))
  const err = (...args: ReadonlyArray<unknown>) => io.err(text(args))
  const none = () => undefined
  return {
    assert: (condition, ...args) => {
      if (!condition) err(...args)
    },
    clear: none,
    count: none,
    countReset: none,
    debug: err,
    dir: (item) => out(item),
    dirxml: out,
    error: err,
    group: none,
    groupCollapsed: none,
    groupEnd: none,
    info: out,
    log: out,
    table: (data) => out(data),
    time: none,
    timeEnd: none,
    timeLog: none,
    trace: err,
    warn: err
  }
}
