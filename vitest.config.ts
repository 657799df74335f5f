import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // A passing run is its summary: "minimal" prints only failing files and tests (each failure in
    // full, with its diff and source), and what a test logged (the gateways' access log, mostly)
    // only for tests that failed. `npx vitest run --reporter=default` lists every file again.
    reporters: ["./test/support/quietReporter.ts"],
    silent: "passed-only",
    // Each file runs in a fresh worker on purpose (gateways, process-wide settings): no hints to share them.
    experimental: { diagnostics: false }
  }
})
