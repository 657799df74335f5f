/**
 * Redis for the scheduler tests: the shared instance at REDIS_TEST_URL (default
 * redis://127.0.0.1:6379) with a fresh key prefix per layer (deleted at the end of the run), and a
 * private `redis-server` on a free port for the tests that stop and restart Redis.
 * When Redis is unreachable the Redis tests are skipped with a warning, unless
 * MODELGATE_REQUIRE_SERVICES=1 (CI), where that is a failure.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { createServer } from "node:net"
import { Redis } from "ioredis"

export const REDIS_URL = process.env["REDIS_TEST_URL"] ?? "redis://127.0.0.1:6379"
export const requireServices = process.env["MODELGATE_REQUIRE_SERVICES"] === "1"

/** Pings once (2 s at most): is Redis there? */
export const redisReachable = async (url = REDIS_URL): Promise<boolean> => {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 2_000, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on("error", () => undefined)
  try {
    await client.connect()
    return (await client.ping()) === "PONG"
  } catch {
    return false
  } finally {
    client.disconnect()
  }
}

const RUN = `mgtest:${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
let prefixes = 0

/** A key prefix no other test (or run) uses. */
export const freshPrefix = (): string => `${RUN}:${++prefixes}:`

/** Deletes every key this run wrote. */
export const cleanupRedis = async (url = REDIS_URL): Promise<void> => {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on("error", () => undefined)
  try {
    await client.connect()
    let cursor = "0"
    do {
      const [next, keys] = await client.scan(cursor, "MATCH", `${RUN}:*`, "COUNT", 1000)
      cursor = next
      if (keys.length > 0) await client.del(...keys)
    } while (cursor !== "0")
  } catch {
    // Unreachable: nothing was written.
  } finally {
    client.disconnect()
  }
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

export const redisServerAvailable = (): boolean => spawnSync("redis-server", ["--version"]).status === 0

/** A throwaway redis-server the test may stop and start again on the same port. */
export interface PrivateRedis {
  readonly url: string
  readonly start: () => Promise<void>
  readonly stop: () => Promise<void>
}

export const privateRedis = async (): Promise<PrivateRedis> => {
  const port = await freePort()
  const url = `redis://127.0.0.1:${port}`
  let child: ChildProcess | undefined
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdio: "ignore"
    })
    const deadline = Date.now() + 5_000
    while (!(await redisReachable(url))) {
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  const stop = async () => {
    const c = child
    child = undefined
    if (c === undefined || c.exitCode !== null) return
    await new Promise<void>((resolve) => {
      c.once("exit", () => resolve())
      c.kill("SIGKILL")
    })
  }
  return { url, start, stop }
}
