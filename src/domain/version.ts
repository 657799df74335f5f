/**
 * modelgate's version, package.json's. Imported rather than read from a path at run time: esbuild
 * inlines it into the bundles (.build/), and tsc's dist/domain/version.js imports the package's
 * own package.json, beside dist/.
 */
import pkg from "../../package.json" with { type: "json" }

export const VERSION: string = pkg.version
