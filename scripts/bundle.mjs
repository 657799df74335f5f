// The esbuild bundles `npm start` and `npx modelgate` run: .build/main.mjs (the gateway, src/main.ts)
// and .build/cli.mjs (the admin CLI, src/cli/main.ts), built together in one esbuild call.
//
// Why: `tsx src/main.ts` transpiles every TypeScript file and Node then resolves and loads hundreds
// of small ESM files from node_modules (effect, @effect/*) on every start: about 2.5 s on 2 cores,
// for the gateway and for every CLI command alike. One bundle per entry loads in a fraction of that.
// The bundles (git-ignored) are rebuilt whenever anything under src/, the lock file, the
// package/tsconfig files or these scripts is newer than them, so `npm ci && npm start` needs no extra
// step and never runs stale code. esbuild only strips types: `npm run typecheck` still checks them.
//
// `freshBundle(name)` is what the launchers (scripts/start.mjs, bin/modelgate.js) call: it rebuilds
// in a child process (`node scripts/bundle.mjs`) when stale and returns the bundle's path. The
// child keeps esbuild's output and the source-map rewrite (tens of MB of heap) out of the server's RSS.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { spawnSync } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const outDir = join(root, ".build")
/** Bundle name -> entry point. */
const entries = { main: "src/main.ts", cli: "src/cli/main.ts" }
const inputs = ["src", "package-lock.json", "package.json", "tsconfig.json", "scripts/bundle.mjs"]
// Worker threads' entry files, plain JavaScript run as they are: the bundle starts them from beside itself.
const workers = ["src/store/writerThread.worker.mjs"]

// Loaded from node_modules instead of bundled: native addons (found at run time through
// node-gyp-build), ioredis (reads its package.json through __dirname, which a bundle does not
// have) and pg (only loaded with a postgres:// DATABASE_URL). SQLite is Node's own node:sqlite,
// a built-in (no addon). Never list a package that imports effect: it would get a second copy of
// effect next to the bundled one.
// gpt-tokenizer is loaded on first use only (estimating a cut stream), and its data is large: it stays out of the bundle.
const external = ["msgpackr-extract", "pg", "pg-native", "ioredis", "gpt-tokenizer"]

/** Newest mtime under `path` (directories count too, so a deleted file also triggers a rebuild). */
const newest = (path) => {
  let stat
  try {
    stat = statSync(path)
  } catch {
    return 0
  }
  let m = stat.mtimeMs
  if (stat.isDirectory()) for (const name of readdirSync(path)) m = Math.max(m, newest(join(path, name)))
  return m
}

const mtime = (path) => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return -1
  }
}

// The source map keeps only the mappings into our own files. With all of node_modules (esbuild
// follows effect's own maps back to its .ts sources) it is ~2.5 MB and Node spends ~200 ms of
// every start decoding it; src/ alone is a tenth of that and costs little.
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
const vlq = (n) => {
  let v = n < 0 ? (-n << 1) | 1 : n << 1
  let out = ""
  do {
    const digit = v & 31
    v >>>= 5
    out += B64[v > 0 ? digit | 32 : digit]
  } while (v > 0)
  return out
}
const onlyOwnSources = (json) => {
  const map = JSON.parse(json)
  const keep = map.sources.map((source) => !source.includes("node_modules/"))
  const field = [0, 0, 0, 0, 0]
  const abs = [0, 0, 0, 0] // source, line, column, name: running values across the whole map
  const out = [0, 0, 0, 0]
  map.mappings = map.mappings.split(";").map((line) => {
    let column = 0
    let outColumn = 0
    const kept = []
    for (const segment of line === "" ? [] : line.split(",")) {
      let n = 0
      for (let i = 0; i < segment.length;) {
        let value = 0
        let shift = 0
        let digit
        do {
          digit = B64.indexOf(segment[i++])
          value += (digit & 31) * 2 ** shift
          shift += 5
        } while (digit & 32)
        field[n++] = value % 2 === 1 ? -(value - 1) / 2 : value / 2
      }
      column += field[0]
      if (n === 1) continue
      for (let k = 1; k < n; k++) abs[k - 1] += field[k]
      if (!keep[abs[0]]) continue
      // Stack traces need the original line; columns within one line are not worth one
      // segment each (Node holds every segment as an array: megabytes of heap for a whole bundle).
      if (kept.length > 0 && abs[0] === out[0] && abs[1] === out[1]) continue
      let text = vlq(column - outColumn)
      outColumn = column
      for (let k = 0; k < n - 1; k++) {
        text += vlq(abs[k] - out[k])
        out[k] = abs[k]
      }
      kept.push(text)
    }
    return kept.join(",")
  }).join(";")
  return JSON.stringify(map)
}

const build = async () => {
  const esbuild = await import("esbuild").catch(() => undefined)
  if (esbuild === undefined) {
    process.stderr.write("modelgate: esbuild is missing; run `npm ci` (with the dev dependencies)\n")
    process.exit(1)
  }
  const startedAt = new Date()
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: entries,
    // One file per entry, no code splitting: measured, a split bundle (the admin API in a chunk of
    // its own) doubled the CPU per streamed request (passthrough SSE 307 -> 607 µs in bench:cpu).
    outdir: outDir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    external,
    // Bundled CommonJS dependencies (ws, undici, ...) call require(); ESM has none.
    banner: { js: "import { createRequire as __modelgateRequire } from \"node:module\"; const require = __modelgateRequire(import.meta.url);" },
    sourcemap: "linked",
    sourcesContent: false, // the map points at the files on disk
    legalComments: "none",
    // Without it the bundle keeps its dependencies' comments, some not ASCII, and V8 then holds the
    // whole 3.9 MB source as a two-byte string (7.5 MB of heap); minified it is 2.7 MB, one byte per
    // character. Names are kept (no minifyIdentifiers) and the source map gives src/ lines.
    minifyWhitespace: true,
    logLevel: "error",
    write: false
  }).catch(() => process.exit(1)) // esbuild has already printed the errors
  await esbuild.stop() // its service process would otherwise live as long as the server
  // Write to per-process temp names, then rename: a concurrent start sees the old or the new
  // bundle, never half a file. The bundles go last so a new bundle always finds its map and workers.
  mkdirSync(outDir, { recursive: true })
  const bundles = new Set(Object.keys(entries).map((name) => join(outDir, `${name}.mjs`)))
  const bundleLast = (file) => (bundles.has(file.path) ? 1 : 0)
  const copies = workers.map((path) => {
    const contents = readFileSync(join(root, path))
    return { path: join(outDir, path.slice(path.lastIndexOf("/") + 1)), contents, text: contents.toString() }
  })
  const files = [...result.outputFiles, ...copies].sort((a, b) => bundleLast(a) - bundleLast(b))
  for (const file of files) {
    const tmp = `${file.path}.${process.pid}.tmp`
    writeFileSync(tmp, file.path.endsWith(".map") ? onlyOwnSources(file.text) : file.contents)
    // Stamp it with the build's start time: a source edited during the build is newer, so the
    // next start rebuilds.
    utimesSync(tmp, startedAt, startedAt)
    try {
      renameSync(tmp, file.path)
    } catch (e) {
      rmSync(tmp, { force: true })
      throw e
    }
  }
}


const hasEsbuild = () => {
  try {
    import.meta.resolve("esbuild")
    return true
  } catch {
    return false
  }
}

/**
 * The path of bundle `name` (main, cli), rebuilt first when any input is newer; undefined when it
 * is stale and cannot be built (no esbuild: an install without the dev dependencies). Exits the
 * process when the build fails (esbuild has printed why).
 */
export const freshBundle = (name) => {
  const bundle = join(outDir, `${name}.mjs`)
  const built = mtime(bundle)
  // A production tree (scripts/release/assemble.sh) has the bundles and no src/ to rebuild them from.
  if (mtime(join(root, "src")) < 0) return built < 0 ? undefined : bundle
  if (built < 0 || inputs.some((input) => newest(join(root, input)) > built)) {
    if (!hasEsbuild()) return undefined
    const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], { stdio: "inherit" })
    if (child.status !== 0) process.exit(child.status ?? 1)
  }
  return bundle
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await build()
