/**
 * Another commit's gateway beside this checkout's, in the same run: "before vs after".
 *
 * `--before <ref>` (or BENCH_BEFORE; default: the last Effect 3 commit, DEFAULT_BEFORE_REF,
 * `--no-before` or BENCH_BEFORE=none for none) checks the ref out as a detached `git worktree` in
 * the bench temp dir and starts a second gateway from it, with the worktree's own `npm start`
 * command line (its package.json flags, its scripts/start.mjs, which bundles its own src/ into its
 * own .build/), run by this bench's Node (Node 24).
 * `--after <ref>` (BENCH_AFTER) does the same for the gateway measured as "after", which otherwise
 * is this checkout, whatever src/ holds at the moment: for comparing two commits, or when the
 * checkout is mid-edit and does not build.
 *
 * The worktree's node_modules is a symlink. A ref with this checkout's package-lock.json links to
 * this checkout's node_modules. A ref whose lock differs (the Effect 3 commits: effect 3.x,
 * @effect/platform, better-sqlite3) gets its own dependencies, as its lock pins them: `npm ci` once
 * into node_modules/.cache/modelgate-bench/<hash of its lock and the Node ABI>/, reused by later
 * runs (the first takes minutes: better-sqlite3 compiles SQLite). Native addons there
 * (better-sqlite3) are compiled from source against the headers of the Node that runs
 * the bench (the npm `node` package ships them; a system Node has them in <prefix>/include/node),
 * since prebuilt binaries are downloads and the gateway runs on this Node, not the one the ref was
 * written for. Either way esbuild (it resolves packages by walking up from the importing file,
 * finds <worktree>/node_modules and follows the link) and Node at run time (the bundle's external
 * packages resolve the same way from <worktree>/.build/) see the ref's packages.
 *
 * The worktree is removed on exit (`git worktree remove --force`, then `git worktree prune`),
 * also on Ctrl-C and errors; BENCH_KEEP=1 keeps the rest of the temp dir but not the worktree. A
 * SIGKILLed bench leaves a stale worktree entry whose directory the watchdog deleted: the next run
 * prunes it before adding its own.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { type Gateway, gatewayLogFile, log, makeTempDir, onCleanup, ROOT, startGateway } from "./harness.js"

/**
 * What "before" means unless told otherwise: the last Effect 3 commit, i.e. the newest commit on
 * HEAD's first-parent history whose package.json depends on effect 3.x (on main after the Effect 4
 * merge: the merge's first parent; on the branch: the commit it forked from).
 */
export const DEFAULT_BEFORE_REF = "last-effect3"

/** How far back along the first-parent history the default looks for an Effect 3 commit. */
const EFFECT3_SEARCH_DEPTH = 400

/** The effect version range a commit's package.json asks for, or undefined. */
const effectVersionAt = (commit: string): string | undefined => {
  try {
    const pkg = JSON.parse(git("show", `${commit}:package.json`)) as { readonly dependencies?: Record<string, string> }
    return pkg.dependencies?.["effect"]
  } catch {
    return undefined
  }
}

/** The newest commit on HEAD's first-parent history on effect 3.x; throws when there is none. */
const lastEffect3Commit = (): string => {
  const commits = git("rev-list", "--first-parent", `--max-count=${EFFECT3_SEARCH_DEPTH}`, "HEAD").split("\n")
  for (const commit of commits) {
    const version = effectVersionAt(commit)
    if (version !== undefined && /^[~^]?3\./.test(version)) return commit
  }
  throw new Error(`no commit on effect 3.x in the last ${EFFECT3_SEARCH_DEPTH} of HEAD's first-parent history`)
}

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
  if (ref === DEFAULT_BEFORE_REF) return lastEffect3Commit()
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
  if (!existsSync(join(root, "scripts", "start.mjs"))) throw new Error(`bench: ${ref} has no scripts/start.mjs to start a gateway from`)
  symlinkSync(dependenciesFor(root, ref), join(root, "node_modules"), "dir")
  return { ref, commit: git("rev-parse", "--short", commit), root }
}

/**
 * The directory with the Node headers native addons compile against, for the Node running this
 * bench: the npm `node` package's platform package (node_modules/node/node_modules/node-<os>-<arch>),
 * or a system install's prefix (<prefix>/include/node). Undefined when neither has them (node-gyp
 * then downloads them, which needs the network).
 */
const nodeHeadersDir = (): string | undefined => {
  const prefix = dirname(dirname(realpathSync(process.execPath)))
  const candidates = [
    join(prefix, "node_modules", `node-${process.platform}-${process.arch}`),
    prefix
  ]
  return candidates.find((dir) => existsSync(join(dir, "include", "node", "node.h")))
}

/**
 * The node_modules the worktree at `root` links to: this checkout's when its lock is the same,
 * else an install of its own lock (made once, then reused; see the module comment).
 */
const dependenciesFor = (root: string, ref: string): string => {
  const ownLock = join(ROOT, "package-lock.json")
  const lock = readFileSync(join(root, "package-lock.json"))
  if (existsSync(ownLock) && lock.equals(readFileSync(ownLock))) return join(ROOT, "node_modules")
  // Keyed by the Node ABI too: a native addon built for one Node major does not load in another.
  const hash = createHash("sha256")
    .update(lock)
    .update(readFileSync(join(root, "package.json")))
    .update(`node-abi-${process.versions.modules}`)
    .digest("hex")
    .slice(0, 16)
  const cache = join(ROOT, "node_modules", ".cache", "modelgate-bench", hash)
  const modules = join(cache, "node_modules")
  if (existsSync(join(cache, "installed"))) return modules
  const staging = `${cache}.${process.pid}.tmp`
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })
  writeFileSync(join(staging, "package.json"), readFileSync(join(root, "package.json")))
  writeFileSync(join(staging, "package-lock.json"), lock)
  const headers = nodeHeadersDir()
  log(`installing ${ref}'s dependencies (its package-lock.json differs from this checkout's) into ${cache}; native addons built from source${headers === undefined ? "" : ` against ${headers}`}`)
  const started = Date.now()
  try {
    execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: staging,
      stdio: ["ignore", "inherit", "inherit"],
      env: {
        ...process.env,
        // Install scripts (node-gyp) run on this Node, and compile for it.
        PATH: `${dirname(process.execPath)}:${process.env["PATH"] ?? ""}`,
        npm_config_build_from_source: "true",
        // node-gyp compiles SQLite's amalgamation with every core.
        JOBS: "max",
        ...(headers === undefined ? {} : { npm_config_nodedir: headers })
      }
    })
  } catch (error) {
    rmSync(staging, { recursive: true, force: true })
    throw new Error(`bench: npm ci of ${ref}'s package-lock.json failed: ${error instanceof Error ? error.message : String(error)}`)
  }
  writeFileSync(join(staging, "installed"), `${new Date().toISOString()} node ${process.version}\n`)
  rmSync(cache, { recursive: true, force: true })
  renameSync(staging, cache)
  log(`installed ${ref}'s dependencies in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  return modules
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
