/**
 * Where the CLI's lines go: an Effect Console over two line writers (stdout and stderr in the
 * process, arrays in tests), so effect/cli's help and the commands' output are captured alike.
 */
import { type Console, Context } from "effect"

export type Print = (line: string) => void

export interface CliIo {
  readonly out: Print
  readonly err: Print
  /** Whether `out` is a terminal that shows colours (help is plain text otherwise). */
  readonly colors?: boolean
  /** Where a command reads a secret from (an account's key); none: nothing is piped. */
  readonly stdin?: StdinShape
}

export interface StdinShape {
  /** Not a terminal: something is piped or redirected in. */
  readonly piped: boolean
  /** All of it, to its end. */
  readonly read: () => Promise<string>
}

/** The command's stdin, for the commands that take a secret on it (never from argv, which other users of the machine can see). */
export const Stdin: Context.Reference<StdinShape> = Context.Reference<StdinShape>("modelgate/cli/Stdin", {
  defaultValue: () => ({ piped: false, read: () => Promise.resolve("") })
})

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
