/**
 * A fake upstream and a gateway on it for the enclosing describe block: started before its tests,
 * closed after them. Read `upstream` and `gw` inside the tests (they exist once the block started).
 */
import { afterAll, beforeAll } from "vitest"
import type { FakeUpstream } from "./fakeUpstream.js"
import { startWithFakeUpstream, type TestGateway } from "./gateway.js"

export interface FakeUpstreamBlock {
  readonly upstream: FakeUpstream
  readonly gw: TestGateway
}

export const fakeUpstreamGatewayForBlock = (): FakeUpstreamBlock => {
  let started: (FakeUpstreamBlock & { readonly close: () => Promise<void> }) | undefined
  beforeAll(async () => {
    started = await startWithFakeUpstream()
  })
  afterAll(() => started?.close())
  const get = () => {
    if (started === undefined) throw new Error("the fake upstream and gateway start before the block's tests")
    return started
  }
  return {
    get upstream() {
      return get().upstream
    },
    get gw() {
      return get().gw
    }
  }
}
