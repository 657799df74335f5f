/**
 * The scheduler's behavioural suite (suite.ts) on the in-process implementation.
 */
import { describe } from "vitest"
import { Scheduler } from "../../src/services/Scheduler.js"
import { schedulerSuite } from "./suite.js"

describe("in-process scheduler", () => {
  schedulerSuite((data, options) => Scheduler.layerTest(data, options))
})
