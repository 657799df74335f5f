// `npm start`: run the gateway from its bundle (.build/main.mjs), rebuilt only when the source
// changed (scripts/bundle.mjs says why and how).
//
// The bundle is imported into this process (no child process), so argv (`--config`), the
// environment and signals (SIGTERM drains) reach src/main.ts exactly as before.
import { pathToFileURL } from "node:url"

// The store uses Node 24's built-in SQLite (node:sqlite). `npm start` runs on the Node 24 that
// `npm ci` installs into node_modules (the `node` dev dependency); a bare `node scripts/start.mjs`
// on an older system Node would otherwise fail later, on a missing built-in module.
if (Number(process.versions.node.split(".")[0]) < 24) {
  process.stderr.write(`modelgate: Node 24 or newer is required (this is ${process.version}); run it through \`npm start\`, which uses node_modules/.bin/node\n`)
  process.exit(1)
}

const { freshBundle } = await import("./bundle.mjs")
const bundle = freshBundle("main")
if (bundle === undefined) {
  process.stderr.write("modelgate: esbuild is missing; run `npm ci` (with the dev dependencies)\n")
  process.exit(1)
}
// Stack traces point at src/*.ts (the same as with tsx).
process.setSourceMapsEnabled(true)
await import(pathToFileURL(bundle).href)
