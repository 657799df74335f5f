/**
 * V8 settings for a request server, applied when the process starts (main.ts imports this first).
 *
 * Allocation-site pretenuring is off. V8 watches which object literals tend to survive a minor GC
 * and starts allocating those straight into the old generation. Under steady load a gateway's
 * request objects are briefly alive at every minor GC, so V8 pretenures some of their sites; the
 * pretenured objects die young anyway, but until the next full GC they still point at the young
 * objects allocated after them, which therefore survive every minor GC and are copied and promoted
 * in turn. Measured at 200 req/s (passthrough JSON): 21-25 MB promoted in 8 s with pretenuring,
 * 5-10 MB without, and half the time paused in minor GCs (docs/performance.md, "Decisions and why").
 * V8 reads the flag at each GC, so setting it at run time works as the command-line flag does.
 */
import { setFlagsFromString } from "node:v8"

setFlagsFromString("--no-allocation-site-pretenuring")
