/**
 * Another commit's gateway beside this checkout's, in the same run: "before vs after".
 *
 * `--before <ref>` (or BENCH_BEFORE; default DEFAULT_BEFORE_REF, `--no-before` or
 * BENCH_BEFORE=none for none) checks the ref out as a detached `git worktree` in the bench temp
 * dir and starts a second gateway from it, with the worktree's own `npm start` command line (its
 * package.json flags, its scripts/start.mjs, which bundles its own src/ into its own .build/).
 * `--after <ref>` (BENCH_AFTER) does the same for the gateway measured as "after", which otherwise
 * is this checkout, whatever src/ holds at the moment: for comparing two commits, or when the
 * checkout is mid-edit and does not build.
 *
 * No `npm install` in the worktree: its node_modules is a symlink to this checkout's. That is
 * enough for both esbuild (it resolves packages by walking up from the importing file, finds
 * <worktree>/node_modules and follows the link) and Node at run time (the bundle's external
 * packages, pg, ioredis and the like, resolve the same way from <worktree>/.build/). Packages
 * are this checkout's versions, so a ref whose package-lock.json differs is measured with these.
 *
 * The worktree is removed on exit (`git worktree remove --force`, then `git worktree prune`),
 * also on Ctrl-C and errors; BENCH_KEEP=1 keeps the rest of the temp dir but not the worktree. A
 * SIGKILLed bench leaves a stale worktree entry whose directory the watchdog deleted: the next run
 * prunes it before adding its own.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { type Gateway, gatewayLogFile, log, makeTempDir, onCleanup, ROOT, startGateway } from "./harness.js"

/** The last commit before the current refactor: what "before" means unless told otherwise. */
export const DEFAULT_BEFORE_REF = "5d74a6c"

/** `--name <value>` or `--name=<value>`; undefined when absent. */
const flagValue = (argv: ReadonlyArray<string>, name: string): string | undefined => {
  const i = argv.indexOf(name)
  if (i >= 0) {
    const value = argv[i + 1]
    if (value === undefined || value.startsWith("--")) throw new Error(`${name} needs a git ref`)
    return value
  }
  return argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1)
}

/** The ref to measure as "before", or undefined for none: --no-before, --before, BENCH_BEFORE, the default. */
export const beforeRefFrom = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv): string | undefined => {
  if (argv.includes("--no-before")) return undefined
  const ref = flagValue(argv, "--before") ?? env["BENCH_BEFORE"] ?? DEFAULT_BEFORE_REF
  return ref === "" || ref === "none" ? undefined : ref
}

/**
 * The "before" worktree, or undefined for none. A ref asked for that cannot be checked out fails
 * the run; the default one only warns, so the bench still runs without git history (a tarball, a
 * shallow clone).
 */
export const checkoutBefore = (ref: string | undefined): Checkout | undefined => {
  if (ref === undefined) return undefined
  try {
    return checkoutWorktree(ref, "before")
  } catch (error) {
    if (ref !== DEFAULT_BEFORE_REF) throw error
    log(`no before gateway: ${error instanceof Error ? error.message : String(error)}`)
    return undefined
  }
}

/** The ref to measure as "after", or undefined for this checkout as it is: --after, BENCH_AFTER. */
export const afterRefFrom = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv): string | undefined => {
  const ref = flagValue(argv, "--after") ?? env["BENCH_AFTER"]
  return ref === "" || ref === "none" ? undefined : ref
}

const git = (...args: ReadonlyArray<string>): string =>
  execFileSync("git", ["-C", ROOT, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim()

/** A checkout of one commit in a worktree. */
export interface Checkout {
  /** As given (a branch, tag or hash). */
  readonly ref: string
  /** The commit's short hash. */
  readonly commit: string
  readonly root: string
}

/** Resolves `ref` to a commit, with an error that says which ref when it does not exist. */
const resolveCommit = (ref: string): string => {
  try {
    return git("rev-parse", "--verify", "--quiet", `${ref}^{commit}`)
  } catch {
    throw new Error(`bench: '${ref}' is not a commit in ${ROOT} (--before/--after, BENCH_BEFORE/BENCH_AFTER)`)
  }
}

/**
 * `git worktree add --detach <temp dir>/<name> <ref>` with node_modules linked to this checkout's;
 * registered for removal on exit.
 */
export const checkoutWorktree = (ref: string, name: string): Checkout => {
  const commit = resolveCommit(ref)
  const root = join(makeTempDir(), name)
  git("worktree", "prune")
  git("worktree", "add", "--detach", "--quiet", root, commit)
  onCleanup(() => {
    try {
      git("worktree", "remove", "--force", root)
    } catch {
      // already gone (the temp dir was removed first); prune drops the entry
    }
    try {
      git("worktree", "prune")
    } catch {
      // nothing to prune
    }
  })
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"), "dir")
  if (!existsSync(join(root, "scripts", "start.mjs"))) throw new Error(`bench: ${ref} has no scripts/start.mjs to start a gateway from`)
  return { ref, commit: git("rev-parse", "--short", commit), root }
}

/** Starts the gateway of a worktree (the bundle its own start script builds); its log tail on failure. */
export const startGatewayAt = async (upstreamUrl: string, checkout: Checkout, label: string): Promise<Gateway> => {
  log(`${label} gateway: ${checkout.ref} (${checkout.commit}) from ${checkout.root}, bundling its src/`)
  try {
    return await startGateway(upstreamUrl, [], "bundle", { root: checkout.root, label })
  } catch (error) {
    const logPath = gatewayLogFile(label)
    const tail = existsSync(logPath) ? readFileSync(logPath, "utf8").trim().split("\n").slice(-20).join("\n") : "(no log)"
    throw new Error(`${label} gateway (${checkout.ref}) did not start: ${error instanceof Error ? error.message : String(error)}\n${tail}`)
  }
}

/**
 * The gateway measured as "after": this checkout's, or the `--after` worktree's. When the checkout
 * does not start (src/ mid-edit), the error says how to measure a commit instead.
 */
export const startAfterGateway = async (upstreamUrl: string, after: Checkout | undefined): Promise<Gateway> => {
  if (after !== undefined) return startGatewayAt(upstreamUrl, after, "gateway")
  try {
    return await startGateway(upstreamUrl)
  } catch (error) {
    throw new Error(
      `this checkout's gateway did not start (${error instanceof Error ? error.message : String(error)}); ` +
        "to measure a commit instead: --after <ref> (BENCH_AFTER)"
    )
  }
}
