/**
 * Where the CLI's lines go: an Effect Console over two line writers (stdout and stderr in the
 * process, arrays in tests), so @effect/cli's help and the commands' output are captured alike.
 */
import { Console, Effect } from "effect"

export type Print = (line: string) => void

export interface CliIo {
  readonly out: Print
  readonly err: Print
}

const text = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? a : String(a))).join(" ")

export const consoleOf = (io: CliIo): Console.Console => {
  const out = (...args: ReadonlyArray<unknown>) => Effect.sync(() => io.out(text(args)))
  const err = (...args: ReadonlyArray<unknown>) => Effect.sync(() => io.err(text(args)))
  const unsafeOut = (...args: ReadonlyArray<unknown>) => io.out(text(args))
  const unsafeErr = (...args: ReadonlyArray<unknown>) => io.err(text(args))
  const none = () => Effect.void
  return {
    [Console.TypeId]: Console.TypeId,
    assert: (condition, ...args) => (condition ? Effect.void : err(...args)),
    clear: Effect.void,
    count: none,
    countReset: none,
    debug: err,
    dir: (item) => out(item),
    dirxml: out,
    error: err,
    group: none,
    groupEnd: Effect.void,
    info: out,
    log: out,
    table: (data) => out(data),
    time: none,
    timeEnd: none,
    timeLog: none,
    trace: err,
    warn: err,
    unsafe: {
      assert: (condition, ...args) => {
        if (!condition) unsafeErr(...args)
      },
      clear: () => undefined,
      count: () => undefined,
      countReset: () => undefined,
      debug: unsafeErr,
      dir: (item) => unsafeOut(item),
      dirxml: unsafeOut,
      error: unsafeErr,
      group: () => undefined,
      groupCollapsed: () => undefined,
      groupEnd: () => undefined,
      info: unsafeOut,
      log: unsafeOut,
      table: (data) => unsafeOut(data),
      time: () => undefined,
      timeEnd: () => undefined,
      timeLog: () => undefined,
      trace: unsafeErr,
      warn: unsafeErr
    }
  }
}
