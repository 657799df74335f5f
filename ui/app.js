// The dashboard: one page, two views. On the public listener a key holder signs in with their API
// key and sees what /v1/usage says about it; on the admin listener an operator signs in with the
// admin token and works through the admin API. The secret lives in sessionStorage only (gone when
// the tab closes), never in a URL.
const mode = document.body.dataset.mode === "admin" ? "admin" : "key"
const STORE = `modelgate.${mode}`
const $ = (id) => document.getElementById(id)

const say = (text, isError = false) => {
  $("message").textContent = text
  $("message").classList.toggle("error", isError)
}

const api = async (method, path, body) => {
  const headers = { authorization: `Bearer ${sessionStorage.getItem(STORE) ?? ""}` }
  if (body !== undefined) headers["content-type"] = "application/json"
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  const json = text === "" ? undefined : JSON.parse(text)
  if (!res.ok) throw new Error(json?.error?.message ?? `${res.status} ${res.statusText}`)
  return json
}

const usd = (n) => `$${Number(n).toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 2)}`
const money = (n) => (n === 0 ? "$0" : Math.abs(n) < 0.01 ? `$${Number(n.toPrecision(2))}` : `$${n.toFixed(2)}`)
/** A cache-hit ratio (0..1, or null when there was no input) as a percentage, never rounded up to 100%. */
const percent = (r) => (r === null || r === undefined ? "—" : `${Math.floor(r * 1000) / 10}%`)
const ratio = (read, input) => (input > 0 ? Math.min(read / input, 1) : null)
const day = (d) => d.toISOString().slice(0, 10)
const requestCount = (n) => `${n} request${n === 1 ? "" : "s"}`
const daysBack = (n) => day(new Date(Date.now() - n * 86_400_000))

/** A table from rows: each column a heading and how to render a cell (text, or a node). */
const table = (el, columns, rows) => {
  el.replaceChildren()
  const head = el.createTHead().insertRow()
  for (const c of columns) {
    const th = document.createElement("th")
    th.scope = "col"
    th.textContent = c.title
    head.append(th)
  }
  const body = el.createTBody()
  for (const row of rows) {
    const tr = body.insertRow()
    for (const c of columns) {
      const cell = tr.insertCell()
      // A narrow screen shows each row as a card: the cell says its column's title itself (style.css).
      cell.dataset.label = c.title
      const value = c.cell(row)
      if (value instanceof Node) cell.append(value)
      else cell.textContent = String(value)
    }
  }
  if (rows.length === 0) body.insertRow().insertCell().textContent = "Nothing yet."
}

const charts = new Map()
const SPEND = "#2563eb"
const REQUESTS = "#16a34a"
/**
 * A line chart per day of one series ({ label, values, stroke, money }): as wide as its box, the
 * y axis from zero in dollars (costs are often fractions of a cent: two significant digits) or in
 * whole counts.
 */
const chart = (el, days, series) => {
  charts.get(el)?.destroy()
  el.replaceChildren()
  if (days.length === 0 || typeof uPlot !== "function") {
    el.textContent = "No usage in this range."
    return
  }
  const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000)
  const width = Math.min(el.clientWidth || 600, 900)
  const plot = new uPlot({
    width,
    height: 220,
    scales: { y: { range: (_, __, max) => [0, max > 0 ? max * 1.1 : 1] } },
    series: [{}, { label: series.label, stroke: series.stroke, width: 2 }],
    axes: [{}, {
      size: 70,
      values: (_, ticks) => ticks.map((t) => (series.money ? money(t) : Number.isInteger(t) ? String(t) : ""))
    }]
  }, [xs, series.values], el)
  charts.set(el, plot)
}

/** Every day of the range, with the rows' figures (zero where a day had none). */
const fillDays = (from, to, rows, pick) => {
  const out = []
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    const d = day(new Date(t))
    const row = rows.find((r) => r.date === d || r.bucket === d)
    out.push({ date: d, value: row === undefined ? 0 : pick(row) })
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Key holder

const showKey = async () => {
  const from = $("key-from").value
  const to = $("key-to").value
  const report = await api("GET", `/v1/usage?start_date=${from}&end_date=${to}`)
  const cards = [
    ["Status", report.status],
    report.mode === "quota_limited"
      ? ["Quota left", `${usd(report.quota.remaining)} of ${usd(report.quota.limit)}`]
      : report.balance !== undefined
      ? ["Balance", usd(report.balance)]
      : ["Remaining", report.remaining < 0 ? "no limit" : usd(report.remaining)],
    ["Today", `${requestCount(report.usage.today.requests)}, ${usd(report.usage.today.cost)}`],
    ["All time", `${requestCount(report.usage.total.requests)}, ${usd(report.usage.total.cost)}`],
    // The share of input tokens the provider read from its prompt cache (cheaper, faster).
    ["Cache hit", percent(ratio(report.usage.total.cache_read_tokens, report.usage.total.input_tokens))]
  ]
  // Each label and its value in a box of their own: the grid places cards, so a value cannot
  // wrap into the next card's column.
  $("key-cards").replaceChildren(...cards.map(([k, v]) => {
    const card = document.createElement("div")
    const dt = document.createElement("dt")
    dt.textContent = k
    const dd = document.createElement("dd")
    dd.textContent = v
    card.append(dt, dd)
    return card
  }))
  const daily = fillDays(from, to, report.daily_stats ?? [], (r) => r.cost)
  chart($("key-chart"), daily.map((d) => d.date), { label: "cost USD", values: daily.map((d) => d.value), stroke: SPEND, money: true })
  table($("key-models"), [
    { title: "Model", cell: (r) => r.model },
    { title: "Requests", cell: (r) => r.requests },
    { title: "Tokens", cell: (r) => r.total_tokens },
    { title: "Cost", cell: (r) => usd(r.cost) }
  ], report.model_stats)
}

// ---------------------------------------------------------------------------------------------
// Operator

/**
 * A row's action: the verb on the button (the row already names what it acts on), the verb and
 * the name for a screen reader, which reads the button out of its row.
 */
const button = (verb, name, onClick) => {
  const b = document.createElement("button")
  b.type = "button"
  b.textContent = verb
  b.setAttribute("aria-label", `${verb} ${name}`)
  b.addEventListener("click", onClick)
  return b
}

const showSecret = (key) => {
  $("secret-value").textContent = key
  $("secret-box").hidden = false
  $("secret-done").focus()
}

const act = (fn) => async () => {
  try {
    await fn()
  } catch (e) {
    say(e.message, true)
  }
}

const loadKeys = async () => {
  const keys = await api("GET", "/admin/keys")
  table($("keys"), [
    { title: "Key", cell: (k) => k.id },
    { title: "Prefix", cell: (k) => k.prefix },
    { title: "User", cell: (k) => k.user },
    { title: "Group", cell: (k) => k.group },
    { title: "Status", cell: (k) => k.status },
    { title: "Spent", cell: (k) => usd(k.quota_used_usd) },
    { title: "Quota", cell: (k) => (k.quota_usd === null ? "none" : usd(k.quota_usd)) },
    { title: "Last used", cell: (k) => (k.last_used_at === null ? "never" : new Date(k.last_used_at).toLocaleString()) },
    {
      title: "Actions",
      cell: (k) => {
        const span = document.createElement("span")
        span.className = "actions"
        span.append(k.status === "disabled"
          ? button("Enable", k.id, act(async () => { await api("POST", `/admin/keys/${encodeURIComponent(k.id)}/enable`); say(`Key ${k.id} enabled.`); await loadKeys() }))
          : button("Disable", k.id, act(async () => { await api("POST", `/admin/keys/${encodeURIComponent(k.id)}/disable`); say(`Key ${k.id} disabled.`); await loadKeys() })))
        if (k.source !== "config") {
          span.append(button("Rotate", k.id, act(async () => {
            const issued = await api("POST", `/admin/keys/${encodeURIComponent(k.id)}/rotate`)
            showSecret(issued.key)
            say(`Key ${k.id} has a new secret; the old one no longer works.`)
            await loadKeys()
          })))
        }
        return span
      }
    }
  ], keys)
}

const loadUsers = async () => {
  const users = await api("GET", "/admin/users")
  table($("users"), [
    { title: "User", cell: (u) => u.name },
    { title: "Balance", cell: (u) => usd(u.balance_usd) },
    { title: "Concurrency", cell: (u) => u.concurrency },
    { title: "From the config file", cell: (u) => (u.in_config ? "yes" : "no") },
    { title: "Status", cell: (u) => (u.disabled ? "disabled" : "active") },
    {
      title: "Actions",
      cell: (u) => {
        const verb = u.disabled ? "enable" : "disable"
        return button(u.disabled ? "Enable" : "Disable", u.name, act(async () => {
          await api("POST", `/admin/users/${encodeURIComponent(u.name)}/${verb}`)
          say(`User ${u.name} ${verb}d.`)
          await loadUsers()
        }))
      }
    }
  ], users)
  $("nk-user").replaceChildren(...users.map((u) => new Option(u.name, u.name)))
}

const loadAccounts = async () => {
  const accounts = await api("GET", "/admin/accounts")
  table($("accounts"), [
    { title: "Account", cell: (a) => a.name },
    { title: "Platform", cell: (a) => a.platform },
    { title: "Groups", cell: (a) => a.groups.join(", ") },
    { title: "In flight", cell: (a) => `${a.in_use} / ${a.concurrency}${a.waiting > 0 ? ` (+${a.waiting} waiting)` : ""}` },
    {
      title: "Health",
      cell: (a) =>
        a.health === "cooling_down" ? `cooling down until ${new Date(a.cooling_down_until).toLocaleTimeString()}` : a.health === "taken_out" ? "taken out (credentials refused)" : "ok"
    },
    // Since this gateway started: the store's usage rows do not name the account.
    { title: "Cache hit", cell: (a) => (a.cache_hit_ratio === null ? "—" : `${percent(a.cache_hit_ratio)} of ${a.input_tokens} tokens`) },
    {
      title: "Actions",
      cell: (a) =>
        a.health === "ok"
          ? button("Take out", a.name, act(async () => {
            await api("POST", `/admin/accounts/${encodeURIComponent(a.name)}/take-out`)
            say(`Account ${a.name} taken out of rotation.`)
            await loadAccounts()
          }))
          : button("Reinstate", a.name, act(async () => {
            await api("POST", `/admin/accounts/${encodeURIComponent(a.name)}/reinstate`)
            say(`Account ${a.name} reinstated.`)
            await loadAccounts()
          }))
    }
  ], accounts)
}

const loadGroups = async () => {
  const groups = await api("GET", "/admin/groups")
  $("nk-group").replaceChildren(...groups.map((g) => new Option(`${g.name} (${g.platform})`, g.name)))
}

const loadOverview = async () => {
  const from = $("admin-from").value
  const to = $("admin-to").value
  const range = `start_date=${from}&end_date=${to}`
  const [byDay, byKey, byModel] = await Promise.all([
    api("GET", `/admin/usage?by=day&${range}`),
    api("GET", `/admin/usage?by=key&${range}`),
    api("GET", `/admin/usage?by=model&${range}`)
  ])
  const cost = fillDays(from, to, byDay.rows, (r) => r.cost_usd)
  const requests = fillDays(from, to, byDay.rows, (r) => r.requests)
  const days = cost.map((d) => d.date)
  chart($("admin-spend-chart"), days, { label: "spend USD", values: cost.map((d) => d.value), stroke: SPEND, money: true })
  chart($("admin-requests-chart"), days, { label: "requests", values: requests.map((d) => d.value), stroke: REQUESTS, money: false })
  const top = (rows) => [...rows].sort((a, b) => b.cost_usd - a.cost_usd).slice(0, 10)
  const columns = (title) => [
    { title, cell: (r) => r.bucket },
    { title: "Requests", cell: (r) => r.requests },
    { title: "Spend", cell: (r) => usd(r.cost_usd) },
    { title: "Cache hit", cell: (r) => percent(r.cache_hit_ratio) }
  ]
  table($("top-keys"), columns("Key"), top(byKey.rows))
  table($("top-models"), columns("Model"), top(byModel.rows))
}

// Opening a section reloads it: what it shows is never older than the click.
const loaders = {
  overview: () => loadOverview(),
  keys: () => loadKeys(),
  users: () => Promise.all([loadUsers(), loadGroups()]),
  accounts: () => loadAccounts()
}
const tab = (name) => {
  for (const b of document.querySelectorAll("[data-tab]")) b.setAttribute("aria-pressed", String(b.dataset.tab === name))
  for (const p of document.querySelectorAll("[data-panel]")) p.hidden = p.dataset.panel !== name
  void act(loaders[name])()
}

const showAdmin = async () => {
  await Promise.all([loadOverview(), loadKeys(), loadUsers(), loadGroups(), loadAccounts()])
}

// ---------------------------------------------------------------------------------------------
// Wiring

const start = async () => {
  const signedIn = sessionStorage.getItem(STORE) !== null
  $("login").hidden = signedIn
  $("logout").hidden = !signedIn
  $(mode === "admin" ? "admin-view" : "key-view").hidden = !signedIn
  if (!signedIn) return
  try {
    if (mode === "admin") await showAdmin()
    else await showKey()
    $("who").textContent = mode === "admin" ? "Signed in as operator" : "Signed in with an API key"
  } catch (e) {
    sessionStorage.removeItem(STORE)
    say(`Sign-in failed: ${e.message}`, true)
    await start()
  }
}

$("secret-label").textContent = mode === "admin" ? "Admin token" : "API key"
$("login-hint").textContent = mode === "admin"
  ? "The ADMIN_TOKEN this gateway was started with."
  : "Your key stays in this tab only; operators sign in on the admin port."
for (const [from, to] of [["key-from", "key-to"], ["admin-from", "admin-to"]]) {
  $(from).value = daysBack(29)
  $(to).value = day(new Date())
}

$("login-form").addEventListener("submit", (e) => {
  e.preventDefault()
  sessionStorage.setItem(STORE, $("secret").value.trim())
  $("secret").value = ""
  say("")
  void start()
})
$("logout").addEventListener("click", () => {
  sessionStorage.removeItem(STORE)
  location.reload()
})
$("key-range").addEventListener("submit", (e) => {
  e.preventDefault()
  void act(showKey)()
})
$("admin-range").addEventListener("submit", (e) => {
  e.preventDefault()
  void act(loadOverview)()
})
for (const b of document.querySelectorAll("[data-tab]")) b.addEventListener("click", () => tab(b.dataset.tab))
$("secret-done").addEventListener("click", () => {
  $("secret-value").textContent = ""
  $("secret-box").hidden = true
})
$("new-key").addEventListener("submit", (e) => {
  e.preventDefault()
  void act(async () => {
    const body = { user: $("nk-user").value, group: $("nk-group").value }
    if ($("nk-name").value.trim() !== "") body.name = $("nk-name").value.trim()
    if ($("nk-quota").value.trim() !== "") body.quota_usd = $("nk-quota").value.trim()
    const issued = await api("POST", "/admin/keys", body)
    $("new-key").reset()
    showSecret(issued.key)
    say(`Key ${issued.id} issued for ${issued.user}.`)
    await loadKeys()
  })()
})
$("new-user").addEventListener("submit", (e) => {
  e.preventDefault()
  void act(async () => {
    const user = await api("POST", "/admin/users", { name: $("nu-name").value.trim(), balance_usd: $("nu-balance").value.trim() || "0" })
    $("new-user").reset()
    say(`User ${user.name} added.`)
    await loadUsers()
  })()
})

void start()
