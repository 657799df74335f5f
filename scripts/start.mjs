// `npm start`: run the gateway from its bundle (.build/main.mjs), rebuilt only when the source
// changed (scripts/bundle.mjs says why and how).
//
// The bundle is imported into this process (no child process), so argv (`--config`), the
// environment and signals (SIGTERM drains) reach src/main.ts exactly as before.
import { pathToFileURL } from "node:url"

// The store uses Node 24's built-in SQLite (node:sqlite). In a checkout, `npm start` runs on the
// Node 24 that `npm ci` installs into node_modules (the `node` dev dependency); a production
// install (no dev dependencies) runs on the machine's own Node, which must then be 24.
if (Number(process.versions.node.split(".")[0]) < 24) {
  process.stderr.write(
    `modelgate: Node 24 or newer is required (this is ${process.version}). In a checkout, \`npm ci\` installs it and ` +
      "`npm start` runs on it; a production install (README \"Deploy\") needs Node 24 on the machine.\n"
  )
  process.exit(1)
}

const { freshBundle } = await import("./bundle.mjs")
const bundle = freshBundle("main")
if (bundle === undefined) {
  process.stderr.write(
    "modelgate: .build/ holds no up-to-date build and esbuild is not installed to make one: run `npm run build` " +
      "with the dev dependencies before installing without them (README \"Deploy\"), or `npm ci` for a development checkout\n"
  )
  process.exit(1)
}
// Stack traces point at src/*.ts (the same as with tsx).
process.setSourceMapsEnabled(true)
await import(pathToFileURL(bundle).href)
