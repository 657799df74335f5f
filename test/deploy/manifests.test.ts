/**
 * The deploy recipes say what the gateway needs (README "Deploy"): this machine cannot pull base
 * images or run a cluster, so the files are read here and held to the gateway's facts (its probes,
 * its drain, its non-root user, one journal per process). What the image's build stage does is run
 * by scripts/release-check.sh (in .ci/run).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { parse, parseAllDocuments } from "yaml"

const ROOT = join(import.meta.dirname, "..", "..")
const read = (path: string) => readFileSync(join(ROOT, path), "utf8")

type Doc = Record<string, any>

/** Dockerfile instructions, continuation lines joined. */
const instructions = (text: string): Array<{ op: string; args: string }> =>
  text.replace(/\\\n/g, " ").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const [op = "", ...rest] = l.split(/\s+/)
      return { op: op.toUpperCase(), args: rest.join(" ") }
    })

describe("Dockerfile", () => {
  const steps = instructions(read("Dockerfile"))
  const of = (op: string) => steps.filter((s) => s.op === op)
  const lastStage = steps.slice(steps.map((s) => s.op).lastIndexOf("FROM"))

  it("builds with full dependencies and runs on the official Node 24 slim image", () => {
    const froms = of("FROM").map((s) => s.args)
    expect(froms.length).toBeGreaterThanOrEqual(2)
    for (const from of froms) expect(from).toMatch(/^node:24-slim\b/)
  })

  it("its build stage runs the script the release check runs, and the run stage copies only its output", () => {
    expect(of("RUN").some((s) => s.args.includes("scripts/release/assemble.sh /app"))).toBe(true)
    const check = read("scripts/release-check.sh")
    expect(check).toContain("scripts/release/assemble.sh")
    expect(read(".ci/run")).toContain("scripts/release-check.sh")
    const copies = lastStage.filter((s) => s.op === "COPY").map((s) => s.args)
    expect(copies).toEqual([expect.stringMatching(/^--from=build --chown=node:node \/app \/app$/)])
  })

  it("copies only files that exist in the repository", () => {
    for (const step of of("COPY").filter((s) => !s.args.includes("--from="))) {
      const sources = step.args.split(/\s+/).slice(0, -1)
      for (const source of sources) if (source !== ".") expect(existsSync(join(ROOT, source)), source).toBe(true)
    }
  })

  it("runs as a non-root user, node as PID 1, SIGTERM to stop, a data volume, a health check without curl", () => {
    expect(lastStage.filter((s) => s.op === "USER").map((s) => s.args)).toEqual(["node"])
    expect(of("STOPSIGNAL").map((s) => s.args)).toEqual(["SIGTERM"])
    expect(of("VOLUME")[0]?.args).toContain("/app/data")
    const cmd = JSON.parse(of("CMD").at(-1)?.args ?? "[]") as Array<string>
    expect(cmd[0]).toBe("node")
    expect(cmd).toContain("scripts/start.mjs")
    const health = of("HEALTHCHECK")[0]?.args ?? ""
    expect(health).toContain("/readyz")
    expect(health).not.toMatch(/curl|wget/)
    expect(health).toMatch(/CMD \["node"/)
  })

  it(".dockerignore keeps the checkout's installs, builds and data out of the context", () => {
    const ignored = read(".dockerignore").split("\n").map((l) => l.trim())
    for (const path of ["node_modules", ".build", "data", ".git", ".env"]) expect(ignored).toContain(path)
  })
})

describe("compose.yaml", () => {
  const compose = parse(read("compose.yaml"), { merge: true }) as Doc
  const services = compose["services"] as Record<string, Doc>
  const gateways = Object.entries(services).filter(([name]) => name.startsWith("gateway"))

  it("runs PostgreSQL, Redis and two gateway instances that share them", () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(["postgres", "redis"]))
    expect(gateways).toHaveLength(2)
    const envs = gateways.map(([, s]) => s["environment"] as Record<string, string>)
    for (const env of envs) {
      expect(env["DATABASE_URL"]).toMatch(/^postgres:\/\/.*@postgres:5432\//)
      expect(env["REDIS_URL"]).toBe("redis://redis:6379")
    }
    expect(envs[0]?.["DATABASE_URL"]).toBe(envs[1]?.["DATABASE_URL"])
  })

  it("gives each instance a journal of its own and more stop time than DRAIN_SECONDS", () => {
    const dataVolumes = gateways.map(([, s]) => (s["volumes"] as Array<string>).find((v) => v.endsWith(":/app/data")))
    expect(dataVolumes.every((v) => v !== undefined)).toBe(true)
    expect(new Set(dataVolumes).size).toBe(2)
    for (const [, s] of gateways) {
      const drain = Number((s["environment"] as Record<string, string>)["DRAIN_SECONDS"])
      expect(Number.parseInt(String(s["stop_grace_period"]), 10)).toBeGreaterThan(drain)
    }
  })

  it("holds no secret: every credential comes from the environment", () => {
    const text = read("compose.yaml")
    expect(text).not.toMatch(/sk-[A-Za-z0-9]/)
    expect(text).toMatch(/POSTGRES_PASSWORD: \$\{POSTGRES_PASSWORD/)
  })
})

describe("Kubernetes manifests (deploy/kubernetes)", () => {
  const dir = join(ROOT, "deploy", "kubernetes")
  const docs = readdirSync(dir).filter((f) => f.endsWith(".yaml"))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), "utf8")).map((d) => d.toJS() as Doc))
  const kind = (k: string) => docs.filter((d) => d["kind"] === k)
  const deployment = kind("Deployment")[0] as Doc
  const pod = deployment["spec"]["template"]["spec"] as Doc
  const container = pod["containers"][0] as Doc
  const env = Object.fromEntries((container["env"] as Array<Doc>).map((e) => [e["name"], e]))
  const labels = deployment["spec"]["template"]["metadata"]["labels"] as Record<string, string>
  const selects = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v)

  it("has a Deployment, a Service, a PodDisruptionBudget that select its pods, and a ConfigMap it mounts", () => {
    expect(selects(deployment["spec"]["selector"]["matchLabels"])).toBe(true)
    expect(selects(kind("Service")[0]?.["spec"]["selector"])).toBe(true)
    expect(selects(kind("PodDisruptionBudget")[0]?.["spec"]["selector"]["matchLabels"])).toBe(true)
    const configMaps = kind("ConfigMap").map((c) => c["metadata"]["name"])
    for (const volume of pod["volumes"] as Array<Doc>) if (volume["configMap"]) expect(configMaps).toContain(volume["configMap"]["name"])
  })

  it("probes readiness on /readyz and liveness on /health, on the port the gateway listens on", () => {
    expect(container["readinessProbe"]["httpGet"]["path"]).toBe("/readyz")
    expect(container["livenessProbe"]["httpGet"]["path"]).toBe("/health")
    const port = container["ports"].find((p: Doc) => p["name"] === container["readinessProbe"]["httpGet"]["port"])
    expect(String(port["containerPort"])).toBe(env["PORT"]?.["value"])
    expect(env["HOST"]?.["value"]).toBe("0.0.0.0")
  })

  it("gives a pod longer to stop than its preStop pause and DRAIN_SECONDS", () => {
    const drain = Number(env["DRAIN_SECONDS"]?.["value"])
    const pause = Number((container["lifecycle"]["preStop"]["exec"]["command"] as Array<string>).at(-1))
    expect(pause).toBeGreaterThan(0)
    // After the drain deadline the gateway cuts what is left one second later.
    expect(pod["terminationGracePeriodSeconds"]).toBeGreaterThan(pause + drain + 1)
  })

  it("takes every secret from a Secret, never inline, and runs as non-root", () => {
    for (const name of ["DATABASE_URL", "REDIS_URL", "ADMIN_TOKEN", "MODELGATE_SECRET_KEY", "OPENAI_API_KEY"]) {
      expect(env[name]?.["valueFrom"]?.["secretKeyRef"]?.["name"], name).toBe("modelgate")
      expect(env[name]?.["value"], name).toBeUndefined()
    }
    expect(pod["securityContext"]["runAsNonRoot"]).toBe(true)
    expect(env["SETTLEMENT_JOURNAL_PATH"]?.["value"]).toMatch(/^\/app\/data\//)
  })
})
