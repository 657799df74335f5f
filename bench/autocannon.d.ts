/**
 * The slice of autocannon 8's programmatic API the bench uses (the package ships no types, and
 * @types/autocannon describes 7.x).
 */
declare module "autocannon" {
  import type { EventEmitter } from "node:events"

  namespace autocannon {
    interface Request {
      readonly method?: string
      readonly path?: string
      readonly headers?: Record<string, string>
      readonly body?: string | Buffer
    }
    interface Options {
      readonly url: string
      readonly connections?: number
      readonly duration?: number
      readonly amount?: number
      readonly timeout?: number
      readonly sampleInt?: number
      readonly method?: string
      readonly headers?: Record<string, string>
      readonly body?: string | Buffer
      readonly requests?: ReadonlyArray<Request>
      readonly overallRate?: number
      readonly connectionRate?: number
    }
    interface Histogram {
      readonly average: number
      readonly mean: number
      readonly stddev: number
      readonly min: number
      readonly max: number
      readonly total: number
      readonly p50: number
      readonly p99: number
    }
    interface Result {
      readonly duration: number
      readonly errors: number
      readonly timeouts: number
      readonly non2xx: number
      readonly latency: Histogram
      readonly requests: Histogram
      readonly throughput: Histogram
      readonly statusCodeStats: Record<string, { readonly count: number }>
      readonly "2xx": number
    }
    interface Instance extends EventEmitter {
      stop(): void
    }
  }

  function autocannon(
    options: autocannon.Options,
    callback: (error: Error | null, result: autocannon.Result) => void
  ): autocannon.Instance

  export = autocannon
}
