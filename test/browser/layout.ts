/**
 * What a person would see wrong on a page, measured in the page itself: text or controls cut off
 * or spilling out of their box, card values under another card's label, a chart line drawn
 * under another one, anything fetched from another host. Each returns a list of problems in
 * words (empty when the page is right), so a failing test says what is wrong where.
 */
import type { Page } from "playwright-core"

/**
 * Every visible control, cell, value and chart fits its own box, the box of the nearest ancestor
 * that clips (a table's scroll area, a chart) and the window. A table that needs sideways
 * scrolling counts: the part past the edge is what a person does not see ("Rotat…").
 */
export const overflowing = (page: Page): Promise<ReadonlyArray<string>> =>
  page.evaluate(() => {
    const problems: Array<string> = []
    const describe = (el: Element) =>
      `${el.tagName.toLowerCase()}${el.id === "" ? "" : `#${el.id}`} "${(el.textContent ?? "").trim().slice(0, 40)}"`
    const shown = (el: Element) => {
      const r = el.getBoundingClientRect()
      return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== "hidden" && el.closest(".visually-hidden") === null
    }
    const width = document.documentElement.clientWidth
    if (document.documentElement.scrollWidth > width) {
      problems.push(`the page scrolls sideways (${document.documentElement.scrollWidth} px in a ${width} px window)`)
    }
    const selector = ["td", "th", "button", "dt", "dd", "input", "select", "label", "code", "h1", "h2", "h3", "p", ".chart", ".scroll"]
      .map((s) => `header ${s}, main ${s}`).join(", ")
    for (const el of Array.from(document.querySelectorAll(selector))) {
      if (!shown(el)) continue
      if (el.scrollWidth > el.clientWidth + 1) {
        problems.push(`${describe(el)}: its content is ${el.scrollWidth} px wide in ${el.clientWidth} px`)
      }
      const r = el.getBoundingClientRect()
      let clip: Element | null = el.parentElement
      while (clip !== null && clip !== document.body && getComputedStyle(clip).overflowX === "visible") clip = clip.parentElement
      const c = clip === null || clip === document.body ? { left: 0, right: width } : clip.getBoundingClientRect()
      if (r.left < c.left - 0.5 || r.right > c.right + 0.5) {
        const by = clip === null || clip === document.body ? "the window" : describe(clip)
        problems.push(`${describe(el)}: cut off by ${by} (${Math.round(r.left)}..${Math.round(r.right)} px in ${Math.round(c.left)}..${Math.round(c.right)})`)
      }
    }
    return problems
  })

/**
 * In each `dl.cards`, every value (the dd after a dt) sits below its own label, starting where it
 * starts, and the nearest label above it is its own (not a neighbour's in a wrapped grid).
 */
export const misplacedCardValues = (page: Page): Promise<ReadonlyArray<string>> =>
  page.evaluate(() => {
    const problems: Array<string> = []
    const lists = Array.from(document.querySelectorAll("dl.cards")).filter((dl) => dl.getBoundingClientRect().width > 0)
    for (const dl of lists) {
      const labels = Array.from(dl.querySelectorAll("dt"))
      if (labels.length === 0) problems.push("a card list with no cards")
      for (const dt of labels) {
        const dd = dt.nextElementSibling
        const label = (dt.textContent ?? "").trim()
        if (dd === null || dd.tagName !== "DD") {
          problems.push(`"${label}" has no value after it`)
          continue
        }
        const value = (dd.textContent ?? "").trim()
        const t = dt.getBoundingClientRect()
        const d = dd.getBoundingClientRect()
        if (d.top < t.bottom - 1 || Math.abs(d.left - t.left) > 1) {
          problems.push(`"${value}" is not under its label "${label}" (label at ${t.left},${t.top}, value at ${d.left},${d.top})`)
          continue
        }
        const nearest = labels
          .map((other) => ({ other, r: other.getBoundingClientRect() }))
          .filter(({ r }) => r.bottom <= d.top + 1 && r.left < d.right && r.right > d.left)
          .sort((a, b) => b.r.bottom - a.r.bottom)[0]
        if (nearest !== undefined && nearest.other !== dt) {
          problems.push(`"${value}" sits under "${(nearest.other.textContent ?? "").trim()}", not under "${label}"`)
        }
      }
    }
    return problems
  })

/**
 * Every series a visible chart's legend names is drawn where a person can see it: the chart's
 * canvas has a line's worth of pixels in that series' colour (a line drawn exactly under another
 * one has almost none). The colours come from the legend's markers, so this holds whatever they are.
 */
export const hiddenSeries = (page: Page): Promise<ReadonlyArray<string>> =>
  page.evaluate(() => {
    const problems: Array<string> = []
    const charts = Array.from(document.querySelectorAll(".chart")).filter((c) => c.getBoundingClientRect().width > 0)
    if (charts.length === 0) problems.push("no chart is shown")
    for (const chart of charts) {
      const canvas = chart.querySelector("canvas")
      if (canvas === null) {
        problems.push(`${chart.id}: no chart drawn ("${(chart.textContent ?? "").trim()}")`)
        continue
      }
      const pixels = canvas.getContext("2d")?.getImageData(0, 0, canvas.width, canvas.height).data
      // The first legend entry is the x axis (time), which has no line.
      const series = Array.from(chart.querySelectorAll(".u-legend .u-series")).slice(1)
      if (series.length === 0) problems.push(`${chart.id}: a chart with no series`)
      for (const s of series) {
        const marker = s.querySelector<HTMLElement>(".u-marker")
        const label = (s.querySelector(".u-label")?.textContent ?? "").trim()
        const rgb = (marker === null ? "" : getComputedStyle(marker).borderColor).match(/\d+/g)?.map(Number)
        if (pixels === undefined || rgb === undefined || rgb.length < 3) {
          problems.push(`${chart.id}: "${label}" has no colour to look for`)
          continue
        }
        let count = 0
        for (let i = 0; i < pixels.length; i += 4) {
          const near = Math.abs(pixels[i]! - rgb[0]!) < 24 && Math.abs(pixels[i + 1]! - rgb[1]!) < 24 && Math.abs(pixels[i + 2]! - rgb[2]!) < 24
          if (near && pixels[i + 3]! > 200) count++
        }
        // A line across the plot leaves at least a pixel per column of half the canvas.
        if (count < canvas.width / 2) problems.push(`${chart.id}: "${label}" is hidden (${count} pixels of its colour)`)
      }
    }
    return problems
  })

/**
 * Opens `url` and lists what the page fetched from another origin, or tried to and its
 * Content-Security-Policy refused (a refused load never reaches the network).
 */
export const foreignLoads = async (page: Page, url: string): Promise<ReadonlyArray<string>> => {
  const origin = new URL(url).origin
  const seen: Array<string> = []
  page.on("request", (request) => seen.push(request.url()))
  await page.addInitScript(() => {
    const w = window as unknown as { modelgateViolations: Array<string> }
    w.modelgateViolations = []
    document.addEventListener("securitypolicyviolation", (e) => w.modelgateViolations.push(`${e.effectiveDirective} ${e.blockedURI}`))
  })
  await page.goto(url, { waitUntil: "networkidle" })
  // Only refused loads: a refused eval or inline script is the policy at work, not a load.
  const refused = (await page.evaluate(() => (window as unknown as { modelgateViolations: Array<string> }).modelgateViolations))
    .filter((v) => /\shttps?:/.test(v))
  const foreign = seen.filter((u) => !u.startsWith("data:") && !u.startsWith("blob:") && new URL(u).origin !== origin)
  return [...foreign.map((u) => `fetched ${u}`), ...refused.map((v) => `refused by the page's CSP: ${v}`)]
}

/**
 * The page's icon: its address if the page declares one that its own Content-Security-Policy lets
 * it load (shown as an image here, under the same policy a tab icon is), else why not.
 */
export const favicon = (page: Page): Promise<string> =>
  page.evaluate(async () => {
    const link = document.querySelector<HTMLLinkElement>('link[rel~="icon"]')
    if (link === null) return "no icon declared"
    const img = new Image()
    img.src = link.href
    try {
      await img.decode()
      return link.href
    } catch {
      return `the icon ${link.href.slice(0, 60)} does not load`
    }
  })
