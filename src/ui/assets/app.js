// agentprof ui: the list of profiles, one profile (top table and flamegraph), and two
// compared. Everything from a profile is put in as text (textContent), never as markup;
// flamegraphs are the server's SVG in sandboxed frames.
"use strict";

const $ = (id) => document.getElementById(id);
let entries = [];
let byId = new Map();

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function q(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "" && v !== false) u.set(k, String(v));
  }
  return u.toString();
}

async function getJSON(url, cache = "no-store") {
  const r = await fetch(url, { cache });
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function showError(e) {
  const p = $("error");
  p.textContent = e ? String(e.message || e) : "";
  p.hidden = !e;
}

function human(n) {
  if (n >= 1 << 20) return (n / 1048576).toFixed(1) + " MiB";
  if (n >= 1024) return (n / 1024).toFixed(1) + " KiB";
  return n + " B";
}

function where(e) {
  if (e.namespace || e.pod) return [e.namespace, e.pod, e.container].filter(Boolean).join("/");
  return e.service || "";
}

function triggerText(t) {
  if (!t) return "";
  const unit = t.unit === "percent" ? " %" : t.unit === "millicores" ? " m" : t.unit === "bytes" ? " B" : "";
  const v = typeof t.value === "number" ? Math.round(t.value * 10) / 10 : t.value;
  return `${t.metric || ""} ${v}${unit} ≥ ${t.threshold}${unit} (${t.level || ""})`;
}

function fillSelect(sel, values) {
  const keep = sel.value;
  while (sel.options.length > 1) sel.remove(1);
  for (const v of [...values].sort()) sel.add(new Option(v, v));
  sel.value = values.has(keep) ? keep : "";
}

function filtered() {
  const svc = $("f-service").value, type = $("f-type").value, cause = $("f-cause").value;
  const from = $("f-from").value, to = $("f-to").value, text = $("f-text").value.toLowerCase();
  return entries.filter((e) =>
    (!svc || where(e) === svc) &&
    (!type || e.type === type) &&
    (!cause || (e.cause || "none") === cause) &&
    // The times are UTC, as the list shows them: the fields are read as UTC too.
    (!from || e.time >= new Date(from + "Z").toISOString()) &&
    (!to || e.time <= new Date(to + "Z").toISOString()) &&
    (!text || (e.path + " " + e.tags.join(" ")).toLowerCase().includes(text)));
}

// Groups folded by a click on their heading (kept across refreshes).
const folded = new Set();

// The list, grouped by service (or namespace/pod/container), newest group first; the first
// thousand profiles are drawn, the filters narrow the rest.
function renderList() {
  const body = $("profiles").tBodies[0];
  const rows = filtered();
  const groups = new Map();
  for (const e of rows) {
    const k = where(e) || "(no service)";
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(e);
  }
  const latest = (g) => g.reduce((m, e) => (e.time > m ? e.time : m), "");
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  const order = [...groups.entries()].sort((x, y) => cmp(latest(y[1]), latest(x[1])) || cmp(x[0], y[0]));
  const frag = document.createDocumentFragment();
  let drawn = 0;
  for (const [k, list] of order) {
    if (drawn >= 1000) break;
    const head = document.createElement("tr");
    head.className = "group";
    head.dataset.group = k;
    const td = el("td");
    td.colSpan = 7;
    const b = el("button", (folded.has(k) ? "▸ " : "▾ ") + k);
    b.type = "button";
    b.onclick = () => { folded.has(k) ? folded.delete(k) : folded.add(k); renderList(); };
    td.append(b, el("span", ` ${list.length} profile${list.length === 1 ? "" : "s"}, latest ${latest(list)}`, "muted"));
    head.append(td);
    frag.append(head);
    if (folded.has(k)) continue;
    for (const e of list) {
      if (drawn++ >= 1000) break;
      const tr = document.createElement("tr");
      tr.dataset.id = e.id;
      tr.append(el("td", e.time), el("td", where(e)), el("td", e.type + (e.kind === "pstats" ? " (pstats)" : "")),
        el("td", e.cause || ""), el("td", triggerText(e.trigger)), el("td", human(e.bytes), "num"));
      const open = el("td");
      const a = el("a", "open");
      a.href = (e.kind === "pstats" ? "#/s?" : "#/p?") + q({ id: e.id });
      open.append(a);
      tr.append(open);
      frag.append(tr);
    }
  }
  body.replaceChildren(frag);
  $("count").textContent = `${rows.length} of ${entries.length} profiles in ${groups.size} group${groups.size === 1 ? "" : "s"}` +
    (rows.length > 1000 ? " (first 1000 shown)" : "");
}

// The listing's ETag as last received: the next ask names it and gets only what changed.
let tag = null;

async function refresh() {
  try {
    const r = await fetch("/api/profiles" + (tag ? "?" + q({ since: tag }) : ""), { cache: "no-store" });
    if (r.status === 304) return;
    const doc = await r.json().catch(() => ({ error: r.statusText }));
    if (!r.ok) throw new Error(doc.error || r.statusText);
    if (doc.entries) {
      entries = doc.entries;
    } else {
      const gone = new Set(doc.removed), changed = new Map(doc.changed.map((e) => [e.id, e]));
      entries = entries.filter((e) => !gone.has(e.id) && !changed.has(e.id)).concat(doc.changed);
      if (entries.length !== doc.count) { tag = null; return refresh(); }
      // The server's order: newest first, then the path.
      const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
      entries.sort((x, y) => cmp(y.time, x.time) || cmp(x.id, y.id));
    }
    tag = r.headers.get("etag");
    byId = new Map(entries.map((e) => [e.id, e]));
    fillSelect($("f-service"), new Set(entries.map(where).filter(Boolean)));
    fillSelect($("f-type"), new Set(entries.map((e) => e.type)));
    fillSelect($("f-cause"), new Set(entries.map((e) => e.cause || "none")));
    $("status").textContent = doc.left_out ? `${doc.left_out} files past the scan's bound are not listed` : "";
    if (!$("list-view").hidden) renderList();
    if (!$("profile-view").hidden && current) profileContext(current);
  } catch (e) {
    showError(e);
  }
}

function topTable(table, report, onPick) {
  const head = document.createElement("tr");
  for (const h of ["flat", "flat%", "sum%", "cum", "cum%", "function"]) head.append(el("th", h));
  table.tHead.replaceChildren(head);
  const frag = document.createDocumentFragment();
  for (const r of report.rows) {
    const tr = document.createElement("tr");
    tr.append(el("td", r.flat_fmt, "num"), el("td", r.flat_pct, "num"), el("td", r.sum_pct, "num"),
      el("td", r.cum_fmt, "num"), el("td", r.cum_pct, "num"),
      el("td", r.function + (r.inline ? " " + r.inline : ""), "fn"));
    if (onPick) {
      tr.tabIndex = 0;
      tr.onclick = () => onPick(r.function, tr);
      tr.onkeydown = (ev) => { if (ev.key === "Enter") onPick(r.function, tr); };
    }
    frag.append(tr);
  }
  table.tBodies[0].replaceChildren(frag);
}

// A function's name as a regular expression that matches it alone (Go's syntax).
function exactly(name) {
  return "^" + name.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&") + "$";
}

// go tool pprof -peek's report: each function with its callers above and callees below.
function peekTable(report) {
  const table = el("table");
  const head = document.createElement("tr");
  for (const h of ["flat", "flat%", "sum%", "cum", "cum%", "calls", "calls%", "function"]) head.append(el("th", h));
  table.createTHead().append(head);
  const body = table.createTBody();
  const edge = (e, arrow) => {
    const tr = document.createElement("tr");
    for (let i = 0; i < 5; i++) tr.append(el("td", "", "num"));
    tr.append(el("td", e.weight_fmt, "num"), el("td", e.pct, "num"),
      el("td", arrow + " " + e.function + (e.inline ? " (inline)" : ""), "fn"));
    body.append(tr);
  };
  for (const e of report.entries) {
    const sep = document.createElement("tr");
    sep.className = "group";
    const td = el("td");
    td.colSpan = 8;
    sep.append(td);
    body.append(sep);
    for (const c of e.callers) edge(c, "↑");
    const tr = document.createElement("tr");
    tr.className = "self";
    tr.append(el("td", e.flat_fmt, "num"), el("td", e.flat_pct, "num"), el("td", e.sum_pct, "num"),
      el("td", e.cum_fmt, "num"), el("td", e.cum_pct, "num"), el("td", "", "num"), el("td", "", "num"),
      el("td", e.function, "fn"));
    body.append(tr);
    for (const c of e.callees) edge(c, "↓");
  }
  return table;
}

// go tool pprof -list's report: per function and file, its lines with their flat and cum.
function sourceTables(doc) {
  const frag = document.createDocumentFragment();
  const rep = doc.report;
  for (const r of rep.routines) {
    frag.append(el("h4", `${r.function} in ${r.file}`));
    frag.append(el("p", `${r.flat_fmt} flat, ${r.cum_fmt} cum (${r.cum_pct.trim()} of the total)`, "muted"));
    if (r.error) frag.append(el("p", r.error + (r.lines.length ? " — the lines with samples:" : ""), "muted"));
    const table = el("table");
    const head = document.createElement("tr");
    for (const h of ["flat", "cum", "line", "source"]) head.append(el("th", h));
    table.createTHead().append(head);
    const body = table.createTBody();
    for (const l of r.lines) {
      const tr = document.createElement("tr");
      if (l.flat || l.cum) tr.className = "hot";
      tr.append(el("td", l.flat_fmt, "num"), el("td", l.cum_fmt, "num"), el("td", l.line, "num"),
        el("td", l.text === null || l.text === undefined ? "" : l.text, "src"));
      body.append(tr);
    }
    const wrap = el("div", null, "scroll");
    wrap.append(table);
    frag.append(wrap);
  }
  for (const n of rep.no_source) frag.append(el("p", `No source information for ${n}`, "muted"));
  return frag;
}

// Empties a flamegraph frame at once by putting a fresh one in its place: the SVG is gone
// before anything else happens. (A frame told to load about:blank keeps its SVG until that
// load commits; hidden meanwhile, the SVG lays itself out at width 0 and draws negative
// widths.)
function emptyFrame(frame) {
  const fresh = frame.cloneNode(false);
  fresh.removeAttribute("src");
  fresh.dataset.url = "";
  frame.replaceWith(fresh);
  return fresh;
}

// A flamegraph into its frame: the frame emptied first (nothing of the profile before stays
// on screen), the SVG asked for, and when it cannot be drawn the reason shown in its place.
// `search` is handed to the SVG's own search (its `s` parameter).
async function loadFlame(frameId, url, search) {
  const frame = emptyFrame($(frameId)), state = $(frameId + "-state");
  state.textContent = "drawing the flamegraph…";
  frame.dataset.url = url;
  try {
    const r = await fetch(url, { cache: "no-store" });
    if (!r.ok) {
      const b = await r.json().catch(() => ({ error: r.statusText }));
      throw new Error(b.error || r.statusText);
    }
    // The frame takes it from the server's last few drawn.
    if (r.body) await r.body.cancel();
  } catch (e) {
    if ($(frameId) !== frame || frame.dataset.url !== url) return;
    state.textContent = "no flamegraph: " + (e.message || e);
    frame.hidden = true;
    return;
  }
  if ($(frameId) !== frame || frame.dataset.url !== url) return;
  state.textContent = "";
  frame.hidden = false;
  frame.src = url + (search ? "&" + q({ s: search }) : "");
}

// The search box under a flamegraph: the SVG highlights what matches as the user types
// (the text is posted to the frame, whose own search runs in place: nothing is fetched
// again); Enter also keeps it in the view's URL.
function searchBox(inputId, frameId, onSearch) {
  let timer = null;
  const send = () => {
    const frame = $(frameId);
    if (frame && frame.contentWindow && frame.dataset.url) {
      frame.contentWindow.postMessage({ agentprof: "search", term: $(inputId).value }, "*");
    }
  };
  $(inputId).oninput = () => {
    clearTimeout(timer);
    timer = setTimeout(send, 120);
  };
  $(inputId).onkeydown = (ev) => {
    if (ev.key !== "Enter") return;
    ev.preventDefault();
    clearTimeout(timer);
    send();
    if (onSearch) onSearch($(inputId).value);
  };
}

// A view's settings kept in its URL (so a link shows the same, and nothing carries over to
// the next profile), without going through the router again.
function keepInHash(view, params) {
  history.replaceState(null, "", `#/${view}?` + q(params));
}

// The scheduled capture of the same pod, container and type just before a triggered one.
function previousScheduled(e) {
  if (!e.cause || e.cause === "scheduled" || e.cause === "upload") return null;
  return entries.find((o) => o.cause === "scheduled" && o.type === e.type && o.namespace === e.namespace &&
    o.pod === e.pod && o.container === e.container && o.time < e.time) || null;
}

// The profile on show, for the listing's arrival and refreshes.
let current = null;

// What the listing knows of a profile: where and why it was taken, what to compare it with.
function profileContext(id) {
  const e = byId.get(id);
  $("p-meta").textContent = e ? [where(e), e.type, e.time, e.cause, triggerText(e.trigger), human(e.bytes), e.tags.join(" ")].filter(Boolean).join(" · ") : "";
  const base = $("p-base");
  const keep = base.value;
  // The profiles of the same type, narrowed by the find box: at most 300 in the list.
  const find = $("p-base-find").value.toLowerCase();
  while (base.options.length > 1) base.remove(1);
  let n = 0;
  for (const o of entries) {
    if (o.id === id || !e || o.type !== e.type || o.kind !== "pprof") continue;
    const label = `${o.time} ${where(o)}`;
    if (find && !(label + " " + o.path).toLowerCase().includes(find)) continue;
    if (n++ >= 300) break;
    base.add(new Option(label, o.id));
  }
  base.value = keep;
  $("p-base-find").oninput = () => profileContext(id);
  const prev = e && previousScheduled(e);
  $("p-previous").hidden = !prev;
  $("p-previous").onclick = () => { location.hash = "#/d?" + q({ base: prev.id, id }); };
  base.onchange = () => { if (base.value) location.hash = "#/d?" + q({ base: base.value, id }); };
}

// The names filters of the profile view, as go tool pprof's -focus, -ignore, -hide, -show.
const NAME_FILTERS = ["focus", "ignore", "hide", "show"];

// The flamegraph frame on show in the profile view picks a function by right-click; the
// message comes from the sandboxed SVG (an origin of its own) and carries the name only.
let pickFromFlame = null;
window.addEventListener("message", (ev) => {
  const frame = $("p-flame");
  if (!frame || ev.source !== frame.contentWindow) return;
  const d = ev.data;
  if (!d || d.agentprof !== "frame" || typeof d.name !== "string" || d.name.length > 4096) return;
  if (pickFromFlame) pickFromFlame(d.name);
});

// The top table asks the server only: it does not wait for the listing. The view's
// settings come from its URL (defaults otherwise) and go back into it as they change.
async function showProfile(params) {
  const id = params.get("id");
  current = id;
  $("p-title").textContent = id;
  // Nothing of the profile shown before stays while this one loads.
  $("p-header").textContent = "";
  $("p-warn").textContent = "";
  $("p-top").tBodies[0].replaceChildren();
  $("p-act").hidden = true;
  $("p-detail").hidden = true;
  $("p-detail-body").replaceChildren();
  $("p-download").href = "/file?" + q({ id });
  $("p-base").value = "";
  $("p-base-find").value = "";
  $("p-sort").value = params.get("sort") === "cum" ? "cum" : "flat";
  $("p-nodes").value = params.get("nodes") || "20";
  $("p-search").value = params.get("s") || "";
  for (const f of NAME_FILTERS) $("p-" + f).value = params.get(f) || "";
  // A peek or source view open ("peek" or "list", and the expression).
  let detail = params.get("peek") ? { kind: "peek", re: params.get("peek") } :
    params.get("list") ? { kind: "list", re: params.get("list") } : null;
  profileContext(id);
  let wanted = params.get("si") || "";
  // What the flamegraph shows (null until it is first drawn).
  let flameFor = null;
  const names = () => Object.fromEntries(NAME_FILTERS.map((f) => [f, $("p-" + f).value]));
  const settings = () => ({ id, si: $("p-sample").value || wanted, sort: $("p-sort").value === "cum" ? "cum" : "",
    nodes: $("p-nodes").value !== "20" ? $("p-nodes").value : "", ...names(),
    peek: detail && detail.kind === "peek" ? detail.re : "", list: detail && detail.kind === "list" ? detail.re : "",
    s: $("p-search").value });
  const showDetail = async () => {
    if (!detail) { $("p-detail").hidden = true; return; }
    const si = $("p-sample").value || wanted;
    const url = detail.kind === "peek" ? "/api/peek?" : "/api/source?";
    $("p-detail").hidden = false;
    $("p-detail-title").textContent = (detail.kind === "peek" ? "callers and callees of " : "source lines of ") + detail.re;
    $("p-detail-header").textContent = "";
    $("p-detail-body").replaceChildren(el("p", "…", "muted"));
    try {
      const doc = await getJSON(url + q({ id, sample_index: si, re: detail.re, cum: $("p-sort").value === "cum", ...names() }));
      if (detail.kind === "peek") {
        $("p-detail-header").textContent = doc.report.header.join("\n");
        $("p-detail-body").replaceChildren(peekTable(doc.report));
      } else {
        $("p-detail-header").textContent = `Total: ${doc.report.total_fmt}` +
          (doc.sources ? "" : " · no source text: start agentprof ui with --source-path DIR to read it");
        $("p-detail-body").replaceChildren(sourceTables(doc));
      }
    } catch (e) {
      $("p-detail-body").replaceChildren(el("p", String(e.message || e), "muted"));
    }
  };
  const pick = (name, row) => {
    for (const r of $("p-top").tBodies[0].rows) r.classList.toggle("picked", r === row);
    $("p-act-name").textContent = name;
    $("p-act").hidden = false;
    for (const b of $("p-act").querySelectorAll("button")) {
      b.onclick = () => {
        const re = exactly(name), act = b.dataset.act;
        if (act === "focus") $("p-focus").value = re;
        else if (act === "ignore" || act === "hide") {
          const box = $("p-" + act);
          box.value = box.value ? box.value + "|" + re : re;
        } else detail = { kind: act, re };
        draw().catch(showError);
      };
    }
    $("p-act").scrollIntoView({ block: "nearest" });
  };
  pickFromFlame = pick;
  const draw = async () => {
    const si = $("p-sample").value || wanted;
    const cum = $("p-sort").value === "cum";
    const nodes = $("p-nodes").value;
    // The flamegraph is drawn beside the table (the server decodes the profile once), of
    // what the filters keep.
    const flameKey = JSON.stringify([si, names()]);
    if (flameFor === null || flameKey !== flameFor) {
      flameFor = flameKey;
      loadFlame("p-flame", "/api/flamegraph.svg?" + q({ id, sample_index: si, ...names() }), $("p-search").value);
    }
    const doc = await getJSON("/api/top?" + q({ id, sample_index: si, cum, nodes, ...names() }));
    const sel = $("p-sample");
    if (sel.options.length !== doc.sample_types.length) {
      sel.replaceChildren(...doc.sample_types.map((t) => new Option(`${t.type} (${t.unit})`, t.type)));
      sel.value = doc.report.sample_type;
      wanted = "";
    }
    $("p-warn").textContent = (doc.warnings || []).join(" · ");
    $("p-header").textContent = doc.report.header.join("\n");
    topTable($("p-top"), doc.report, pick);
    keepInHash("p", settings());
    await showDetail();
  };
  $("p-sample").replaceChildren();
  for (const c of ["p-sample", "p-sort", "p-nodes", ...NAME_FILTERS.map((f) => "p-" + f)]) $(c).onchange = () => draw().catch(showError);
  $("p-clear").onclick = () => { for (const f of NAME_FILTERS) $("p-" + f).value = ""; draw().catch(showError); };
  $("p-detail-close").onclick = () => { detail = null; $("p-detail").hidden = true; keepInHash("p", settings()); };
  searchBox("p-search", "p-flame", () => keepInHash("p", settings()));
  await draw();
}

async function showDiff(params) {
  const base = params.get("base"), id = params.get("id");
  $("d-title").textContent = `${base} → ${id}`;
  $("d-header").textContent = "";
  $("d-table").tBodies[0].replaceChildren();
  $("d-back").href = "#/p?" + q({ id });
  const draw = async () => {
    const normalize = $("d-normalize").checked;
    const doc = await getJSON("/api/diff?" + q({ base, id, normalize, nodes: $("d-nodes").value }));
    const rep = doc.report;
    $("d-header").textContent = `Type: ${rep.sample_type} · ${rows(doc.rows_total, rep.rows.length)}` +
      (rep.base_scale !== 1 ? ` · base normalized: its values multiplied by ${rep.base_scale.toFixed(4)}` : "");
    const frag = document.createDocumentFragment();
    // agentprof diff's cells, each value in the unit that shows it.
    for (const r of rep.rows) {
      const t = r.text, tr = document.createElement("tr");
      for (const c of [t.delta_flat, t.delta_flat_own, t.delta_flat_total, t.delta_cum, t.delta_cum_own,
        t.delta_cum_total, t.new_flat, t.new_cum]) tr.append(el("td", c, "num"));
      tr.append(el("td", r.function, "fn"));
      frag.append(tr);
    }
    $("d-table").tBodies[0].replaceChildren(frag);
    loadFlame("d-flame", "/api/diff.svg?" + q({ base, id, normalize }), $("d-search").value);
    keepInHash("d", { base, id, normalize, nodes: $("d-nodes").value !== "30" ? $("d-nodes").value : "",
      s: $("d-search").value });
  };
  $("d-normalize").checked = params.get("normalize") === "true";
  $("d-nodes").value = params.get("nodes") || "30";
  $("d-search").value = params.get("s") || "";
  $("d-normalize").onchange = $("d-nodes").onchange = () => draw().catch(showError);
  searchBox("d-search", "d-flame");
  await draw();
}

function rows(total, shown) {
  return shown < total ? `${shown} of ${total} changed functions` : `${total} changed functions`;
}

// pstats' func_std_string.
function funcName(r) {
  if (r.file === "~" && r.line === 0) {
    const n = r.function;
    return n.startsWith("<") && n.endsWith(">") ? "{" + n.slice(1, -1) + "}" : n;
  }
  return `${r.file}:${r.line}(${r.function})`;
}

async function showPstats(params) {
  const id = params.get("id");
  let sort = params.get("sort") || "cumulative";
  $("s-title").textContent = id;
  $("s-meta").textContent = "";
  $("s-table").tBodies[0].replaceChildren();
  $("s-download").href = "/file?" + q({ id });
  const f3 = (x) => x.toFixed(3);
  const draw = async () => {
    const doc = await getJSON("/api/pstats?" + q({ id, sort, nodes: $("s-nodes").value }));
    $("s-meta").textContent = `${doc.total_calls} function calls` +
      (doc.total_calls !== doc.primitive_calls ? ` (${doc.primitive_calls} primitive calls)` : "") +
      ` in ${f3(doc.total_time_s)} seconds · ordered by ${doc.ordered_by} · ${doc.functions} functions`;
    const frag = document.createDocumentFragment();
    for (const r of doc.top) {
      const tr = document.createElement("tr");
      tr.append(el("td", r.ncalls, "num"), el("td", f3(r.tottime), "num"),
        el("td", r.calls ? f3(r.tottime / r.calls) : "", "num"), el("td", f3(r.cumtime), "num"),
        el("td", r.primitive_calls ? f3(r.cumtime / r.primitive_calls) : "", "num"), el("td", funcName(r), "fn"));
      frag.append(tr);
    }
    $("s-table").tBodies[0].replaceChildren(frag);
  };
  for (const th of $("s-table").tHead.querySelectorAll("th[data-sort]")) {
    th.onclick = () => { sort = th.dataset.sort; draw().catch(showError); };
  }
  $("s-nodes").onchange = () => draw().catch(showError);
  $("s-search").value = params.get("s") || "";
  searchBox("s-search", "s-flame");
  await draw();
  loadFlame("s-flame", "/api/pstats.svg?" + q({ id }), $("s-search").value);
}

async function route() {
  showError(null);
  current = null;
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query || "");
  const views = { "/": "list-view", "/p": "profile-view", "/d": "diff-view", "/s": "pstats-view" };
  for (const [p, id] of Object.entries(views)) {
    const hide = p !== path;
    // A flamegraph left in a hidden view would lay itself out at width 0: it is unloaded.
    if (hide && !$(id).hidden) for (const f of $(id).querySelectorAll("iframe")) emptyFrame(f);
    $(id).hidden = hide;
  }
  try {
    if (path === "/p") await showProfile(params);
    else if (path === "/d") await showDiff(params);
    else if (path === "/s") await showPstats(params);
    else renderList();
  } catch (e) {
    showError(e);
  }
}

window.addEventListener("hashchange", route);
// No form of the page is ever sent: Enter acts in place.
document.addEventListener("submit", (ev) => ev.preventDefault());
for (const id of ["f-service", "f-type", "f-cause", "f-from", "f-to", "f-text"]) {
  document.addEventListener("DOMContentLoaded", () => { $(id).oninput = renderList; });
}
document.addEventListener("DOMContentLoaded", async () => {
  // A profile's page asks for its table at once; the listing follows (it can be megabytes).
  const listing = refresh();
  route();
  await listing;
  // New captures appear without a reload.
  setInterval(refresh, 3000);
});
