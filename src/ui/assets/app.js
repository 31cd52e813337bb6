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

async function getJSON(url, cache = "no-store", signal = undefined) {
  const r = await fetch(url, { cache, signal });
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
    td.append(b, el("span", ` ${list.length} profile${list.length === 1 ? "" : "s"}, latest ${latest(list)} `, "muted"));
    const first = list.find((e) => e.kind === "pprof" && e.service);
    if (first) {
      const t = el("a", "timeline");
      t.href = "#/t?" + q({ service: first.service, type: first.type });
      td.append(t);
    }
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

// The first listing's arrival (the timeline's choices come from it).
let listed = Promise.resolve();

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

function topTable(table, report, onPick, ticked) {
  const head = document.createElement("tr");
  for (const h of ["flat", "flat%", "sum%", "cum", "cum%", "function"]) head.append(el("th", h));
  table.tHead.replaceChildren(head);
  const frag = document.createDocumentFragment();
  for (const r of report.rows) {
    const tr = document.createElement("tr");
    tr.append(el("td", r.flat_fmt, "num"), el("td", r.flat_pct, "num"), el("td", r.sum_pct, "num"),
      el("td", r.cum_fmt, "num"), el("td", r.cum_pct, "num"),
      el("td", r.function + (r.inline ? " " + r.inline : ""), "fn"));
    if (ticked) {
      const box = document.createElement("input");
      box.type = "checkbox";
      box.className = "tick";
      box.title = "select with others";
      box.checked = ticked.has(r.function);
      box.onclick = (ev) => ev.stopPropagation();
      box.onchange = () => { box.checked ? ticked.add(r.function) : ticked.delete(r.function); ticked.changed(); };
      tr.cells[5].prepend(box);
    }
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
async function loadFlame(frameId, url, search, onFolded) {
  const frame = emptyFrame($(frameId)), state = $(frameId + "-state");
  let folded = 0;
  state.textContent = "drawing the flamegraph…";
  frame.dataset.url = url;
  try {
    const r = await fetch(url, { cache: "no-store" });
    if (!r.ok) {
      const b = await r.json().catch(() => ({ error: r.statusText }));
      throw new Error(b.error || r.statusText);
    }
    // The frame takes it from the server's last few drawn.
    folded = Number(r.headers.get("x-agentprof-folded") || 0);
    if (r.body) await r.body.cancel();
  } catch (e) {
    if ($(frameId) !== frame || frame.dataset.url !== url) return;
    state.textContent = "no flamegraph: " + (e.message || e);
    frame.hidden = true;
    return;
  }
  if ($(frameId) !== frame || frame.dataset.url !== url) return;
  state.textContent = "";
  if (folded && onFolded) onFolded(folded, state);
  frame.hidden = false;
  frame.src = url + (search ? "&" + q({ s: search }) : "");
}

// The search box under a flamegraph: the SVG highlights what matches as the user types
// (the text is posted to the frame, whose own search runs in place: nothing is fetched
// again); Enter also keeps it in the view's URL. With `matchUrl` (a term's /api/match URL)
// the whole profile is searched too, frames folded out of the picture included, and its
// share — what go tool pprof -focus keeps — or "nothing matched" is said under the box; the
// answer of the latest term only (an older one still coming is cancelled).
// The search box of each flamegraph frame. A flamegraph that arrives in its frame after the
// term was typed (a large one takes seconds) is handed the term once it has loaded: a message
// posted before the SVG's script listens is lost. One listener for every frame and view.
const searchBoxes = new Map();
document.addEventListener("load", (ev) => {
  const frame = ev.target, input = frame && frame.id ? searchBoxes.get(frame.id) : null;
  const term = input && $(input) ? $(input).value : "";
  if (term && frame.contentWindow && frame.dataset.url) {
    frame.contentWindow.postMessage({ agentprof: "search", term }, "*");
  }
}, true);

function searchBox(inputId, frameId, onSearch, matchUrl) {
  let timer = null, pending = null;
  const state = $(inputId + "-state");
  const send = () => {
    const frame = $(frameId), term = $(inputId).value;
    if (frame && frame.contentWindow && frame.dataset.url) {
      frame.contentWindow.postMessage({ agentprof: "search", term }, "*");
    }
    if (!matchUrl || !state) return;
    if (pending) pending.abort();
    pending = null;
    if (!term) { state.textContent = ""; return; }
    const mine = pending = new AbortController();
    state.textContent = "searching the whole profile…";
    fetch(matchUrl(term), { signal: mine.signal }).then(async (r) => {
      const b = await r.json().catch(() => ({ error: r.statusText }));
      if (pending !== mine) return;
      if (!r.ok) { state.textContent = b.error || r.statusText; return; }
      state.textContent = b.functions === 0 || b.matched === 0
        ? `nothing matched ${term} in the profile`
        : `matched ${(100 * b.share).toFixed(1)}% of the profile's ${b.sample_type} ` +
          `(${b.functions} function${b.functions === 1 ? "" : "s"}; go tool pprof -focus keeps the same)`;
    }).catch((e) => { if (pending === mine && e.name !== "AbortError") state.textContent = String(e.message || e); });
  };
  $(inputId).oninput = () => {
    clearTimeout(timer);
    timer = setTimeout(send, 120);
  };
  searchBoxes.set(frameId, inputId);
  $(inputId).onkeydown = (ev) => {
    if (ev.key !== "Enter") return;
    ev.preventDefault();
    clearTimeout(timer);
    send();
    if (onSearch) onSearch($(inputId).value);
  };
  // A term from the URL is searched once the view is drawn.
  return send;
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
  $("p-title").textContent = id.startsWith("sel:") ? selTitle(id) : id;
  // Nothing of the profile shown before stays while this one loads.
  $("p-header").textContent = "";
  $("p-warn").textContent = "";
  $("p-top").tBodies[0].replaceChildren();
  $("p-act").hidden = true;
  $("p-detail").hidden = true;
  $("p-detail-body").replaceChildren();
  $("p-download").href = "/file?" + q({ id });
  $("p-view").value = ["icicle", "graph"].includes(params.get("view")) ? params.get("view") : "flame";
  const isSel = id.startsWith("sel:");
  $("p-timeline").hidden = !isSel;
  if (isSel) {
    const u = new URLSearchParams(id.slice(4));
    $("p-timeline").href = "#/t?" + q({ service: u.get("service"), type: u.get("type"), tags: u.getAll("tag").join(" "), labels: u.getAll("label").join(",") });
  }
  $("p-base").value = "";
  $("p-base-find").value = "";
  $("p-sort").value = params.get("sort") === "cum" ? "cum" : "flat";
  $("p-nodes").value = params.get("nodes") || "20";
  $("p-search").value = params.get("s") || "";
  for (const f of NAME_FILTERS) $("p-" + f).value = params.get(f) || "";
  // A peek or source view open ("peek" or "list", and the expression).
  let detail = params.get("peek") ? { kind: "peek", re: params.get("peek") } :
    params.get("list") ? { kind: "list", re: params.get("list") } :
    params.get("sandwich") ? { kind: "sandwich", re: params.get("sandwich") } : null;
  // Functions ticked in the table, to act on together.
  const ticked = new Set();
  ticked.changed = () => {
    $("p-multi").hidden = ticked.size === 0;
    $("p-multi-text").textContent = `${ticked.size} selected`;
  };
  ticked.changed();
  profileContext(id);
  let wanted = params.get("si") || "";
  // Frames the flamegraph draws at most (the server's bound when not asked).
  let frames = params.get("frames") || "";
  // What the flamegraph shows (null until it is first drawn).
  let flameFor = null;
  const names = () => Object.fromEntries(NAME_FILTERS.map((f) => [f, $("p-" + f).value]));
  const settings = () => ({ id, si: $("p-sample").value || wanted, sort: $("p-sort").value === "cum" ? "cum" : "",
    nodes: $("p-nodes").value !== "20" ? $("p-nodes").value : "", ...names(),
    peek: detail && detail.kind === "peek" ? detail.re : "", list: detail && detail.kind === "list" ? detail.re : "",
    s: $("p-search").value, view: $("p-view").value !== "flame" ? $("p-view").value : "",
    sandwich: detail && detail.kind === "sandwich" ? detail.re : "", frames });
  const showDetail = async () => {
    if (!detail) { $("p-detail").hidden = true; return; }
    const si = $("p-sample").value || wanted;
    $("p-detail").hidden = false;
    if (detail.kind === "sandwich") {
      $("p-detail-title").textContent = "callers and callees of " + detail.re;
      $("p-detail-header").textContent = "";
      const frames = ["callers", "callees"].map((side) => {
        const f = document.createElement("iframe");
        f.setAttribute("sandbox", "allow-scripts allow-modals");
        f.title = side;
        f.className = "sandwich";
        f.src = "/api/sandwich.svg?" + q({ id, sample_index: si, re: detail.re, side, ...names() });
        return f;
      });
      $("p-detail-body").replaceChildren(...frames);
      return;
    }
    const url = detail.kind === "peek" ? "/api/peek?" : "/api/source?";
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
          (!doc.report.routines.every((r) => r.error) ? "" : doc.sources === "recorded" ?
            " · no source file found at the paths the profile records: start agentprof ui with --source-path DIR to read them from DIR" :
            doc.sources === "none" ? " · no source text: start agentprof ui with --source-path DIR to read it" : "");
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
    const view = $("p-view").value;
    $("p-graph-zoom").hidden = view !== "graph";
    const flameKey = JSON.stringify([si, names(), view]);
    if (flameFor === null || flameKey !== flameFor) {
      flameFor = flameKey;
      const url = view === "graph" ? "/api/graph.svg?" + q({ id, sample_index: si, ...names() }) :
        "/api/flamegraph.svg?" + q({ id, sample_index: si, ...names(), icicle: view === "icicle", frames });
      // A picture of more frames than the page draws at once says how many it folded, and
      // draws them all on a click.
      loadFlame("p-flame", url, $("p-search").value, (n, state) => {
        state.append(`${n} of the narrowest frames are folded into their callers to keep the picture quick. `);
        // Four times as many each time: a picture of 100,000 frames opens in seconds and
        // its search takes minutes.
        const more = Math.min(200000, 4 * (Number(frames) || 3000));
        const all = el("button", `draw up to ${more.toLocaleString("en")} frames`);
        all.type = "button";
        all.onclick = () => { frames = String(more); flameFor = null; draw().catch(showError); };
        state.append(all);
      });
    }
    const doc = await getJSON("/api/top?" + q({ id, sample_index: si, cum, nodes, ...names() }));
    const sel = $("p-sample");
    if (sel.options.length !== doc.sample_types.length) {
      sel.replaceChildren(...doc.sample_types.map((t) => new Option(`${t.type} (${t.unit})`, t.type)));
      sel.value = doc.report.sample_type;
      wanted = "";
    }
    $("p-warn").textContent = (doc.warnings || []).join(" · ");
    if (doc.selection) {
      const sx = doc.selection, r = doc.report, secs = doc.duration_nanos / 1e9;
      $("p-meta").textContent = `${sx.captures} captures merged, ${sx.first} – ${sx.last}` +
        (secs > 0 ? ` · ${secs.toFixed(1)} s recorded · ${unitText(r.total / secs, r.unit)}/s of ${r.sample_type} on average` : "");
    }
    $("p-header").textContent = doc.report.header.join("\n");
    topTable($("p-top"), doc.report, pick, ticked);
    keepInHash("p", settings());
    await showDetail();
  };
  $("p-sample").replaceChildren();
  for (const b of $("p-multi").querySelectorAll("button")) {
    b.onclick = () => {
      const act = b.dataset.multi;
      if (act !== "clear" && ticked.size) {
        const re = [...ticked].map(exactly).join("|");
        const box = $("p-" + act);
        box.value = act === "focus" || !box.value ? re : box.value + "|" + re;
      }
      ticked.clear();
      ticked.changed();
      draw().catch(showError);
    };
  }
  // Drawn again, and the search's share of what is now drawn asked again.
  const redraw = () => draw().then(() => { if ($("p-search").value) searchNow(); }).catch(showError);
  for (const c of ["p-sample", "p-sort", "p-nodes", "p-view", ...NAME_FILTERS.map((f) => "p-" + f)]) $(c).onchange = redraw;
  for (const b of $("p-graph-zoom").querySelectorAll("button")) {
    b.onclick = () => {
      const frame = $("p-flame"), by = b.dataset.zoom;
      if (frame.contentWindow) frame.contentWindow.postMessage({ agentprof: "zoom", by: Number(by) || by }, "*");
    };
  }
  $("p-clear").onclick = () => { for (const f of NAME_FILTERS) $("p-" + f).value = ""; redraw(); };
  $("p-detail-close").onclick = () => { detail = null; $("p-detail").hidden = true; keepInHash("p", settings()); };
  const searchNow = searchBox("p-search", "p-flame", () => keepInHash("p", settings()),
    (re) => "/api/match?" + q({ id, sample_index: $("p-sample").value || wanted, ...names(), re }));
  await draw();
  if ($("p-search").value) searchNow();
}

async function showDiff(params) {
  const base = params.get("base"), id = params.get("id");
  const named = (x) => (x.startsWith("sel:") ? selTitle(x) : x);
  $("d-title").textContent = `${named(base)} → ${named(id)}`;
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

// ---- The timeline: one service's captures of one type over time, per group; a range
// brushed on it opens merged, or compared with the range before it.

const SVGNS = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

// What a selection's id selects, in words: "web cpu, 10:00 – 11:00 UTC, pod:web-1 (merged)".
function selTitle(id) {
  const u = new URLSearchParams(id.slice(4));
  const t = (x) => (x ? x.replace("T", " ").replace(/\.\d+Z$|Z$/, "") : "…");
  const range = u.get("from") || u.get("to") ? `, ${t(u.get("from"))} – ${t(u.get("to"))} UTC` : "";
  return `${u.get("service") || "every service"} ${u.get("type")}${range}` +
    [...u.getAll("tag"), ...u.getAll("label")].map((x) => " " + x).join("") + " (merged)";
}

// A selection's id, as the server reads it: `sel:` and the selection as a query.
function selId(s, from, to) {
  const u = new URLSearchParams();
  if (s.service) u.append("service", s.service);
  u.append("type", s.type);
  if (from) u.append("from", from);
  if (to) u.append("to", to);
  for (const t of s.tags) u.append("tag", t);
  for (const l of s.labels) u.append("label", l);
  return "sel:" + u.toString();
}

function words(v, sep) {
  return v.split(sep).map((x) => x.trim()).filter(Boolean);
}

// A value in the unit the timeline's type has, shortly.
function unitText(v, unit) {
  const a = Math.abs(v);
  const scaled = (div, names) => {
    for (const [d, n] of names) if (a >= d) return (v / d).toFixed(a / d >= 100 ? 0 : 2) + n;
    return v.toFixed(0) + names[names.length - 1][1];
  };
  if (unit === "nanoseconds") return scaled(0, [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]]);
  if (unit === "bytes") return scaled(0, [[1 << 30, "GiB"], [1 << 20, "MiB"], [1 << 10, "KiB"], [1, "B"]]);
  return scaled(0, [[1e9, "G"], [1e6, "M"], [1e3, "k"], [1, ""]]);
}

// A time as a range in the URL names it: RFC 3339, `now`, or `now-` a number and s, m, h,
// d or w; "" is open. Returns an RFC 3339 string, "" for open, or null for what is not one.
function instantOf(text) {
  if (!text) return "";
  const rel = /^now(?:-(\d+(?:\.\d+)?)([smhdw]))?$/.exec(text.trim());
  if (rel) {
    const unit = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 }[rel[2] || "s"];
    return new Date(Date.now() - (rel[1] ? Number(rel[1]) * unit : 0)).toISOString();
  }
  const t = Date.parse(text);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

// A round step for an axis whose data spans about `x` per tick: 1, 2 or 5 times a power of ten.
function roundStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  const m = x / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

// A round time step for a span (at most about 6 ticks), with how its ticks read.
function timeStep(span) {
  const steps = [1e3, 5e3, 10e3, 30e3, 60e3, 5 * 60e3, 10 * 60e3, 15 * 60e3, 30 * 60e3, 3600e3, 3 * 3600e3,
    6 * 3600e3, 12 * 3600e3, 86400e3, 2 * 86400e3, 7 * 86400e3, 30 * 86400e3];
  const step = steps.find((x) => span / x <= 6) || steps[steps.length - 1];
  const iso = (d) => d.toISOString();
  const label = step >= 86400e3 ? (d) => iso(d).slice(0, 10)
    : step >= 60e3 ? (d) => iso(d).slice(5, 16).replace("T", " ")
    : (d) => iso(d).slice(11, 19);
  return [step, label];
}

const LAST = { "1h": 3600e3, "6h": 6 * 3600e3, "1d": 86400e3, "7d": 7 * 86400e3 };
const COLORS = ["#7b3fe4", "#e4572e", "#17bebb", "#f3a712", "#2e86ab", "#a23b72", "#3b8b2e", "#d1242f", "#6c757d", "#ff7f0e", "#1f77b4", "#8c564b"];

// The range brushed last, and the one kept as a base.
let brushed = null, baseRange = null;

async function showTimeline(params) {
  // Nothing of the timeline shown before stays while this one is read.
  $("t-chart").replaceChildren();
  $("t-legend").replaceChildren();
  $("t-tip").textContent = "";
  // Nor the range brushed on it: its table and its flamegraph.
  $("t-top").tBodies[0].replaceChildren();
  $("t-top").tHead.replaceChildren();
  $("t-top").dataset.id = "";
  emptyFrame($("t-flame")).hidden = true;
  $("t-flame-state").textContent = "";
  const svc = $("t-service"), type = $("t-type");
  // The choices come from the listing (megabytes for a week of captures): a timeline its
  // URL names is drawn first, the choices filled when the listing is there.
  const fillChoices = () => {
    const services = new Set(entries.filter((e) => e.kind === "pprof" && e.service).map((e) => e.service));
    const keep = svc.value || params.get("service");
    svc.replaceChildren(...[...services].sort().map((x) => new Option(x, x)));
    svc.value = services.has(keep) ? keep : (svc.options[0] && svc.options[0].value) || "";
    fillTypes(type.value || params.get("type"));
    // The keys the listing's captures carry, offered for the group-by.
    const keys = new Set(["pod", "namespace", "container", "cause", "trigger"]);
    for (const e of entries) for (const t of e.tags) { const i = t.indexOf(":"); if (i > 0) keys.add(t.slice(0, i)); }
    $("t-group-keys").replaceChildren(...[...keys].sort().map((k) => new Option(k)),
      ...[...labelKeys].sort().map((k) => new Option("label:" + k)));
  };
  // Sample labels seen in the series' answers (their label index), offered beside the tags.
  const labelKeys = new Set();
  const offerLabels = (labels) => {
    for (const l of labels) labelKeys.add(l.key);
    const have = new Set([...$("t-group-keys").options].map((o) => o.value));
    for (const k of labelKeys) if (!have.has("label:" + k)) $("t-group-keys").append(new Option("label:" + k));
    $("t-label-values").replaceChildren(...labels.flatMap((l) => l.values.map((v) => new Option(`${l.key}=${v.value}`))));
  };
  const types = () => new Set(entries.filter((e) => e.kind === "pprof" && e.service === svc.value).map((e) => e.type));
  const fillTypes = (want) => {
    const have = types();
    if (want) have.add(want);
    type.replaceChildren(...[...have].sort().map((t) => new Option(t, t)));
    type.value = want && have.has(want) ? want : (have.has("cpu") ? "cpu" : (type.options[0] && type.options[0].value) || "");
  };
  const named = params.get("service") && params.get("type");
  if (named) {
    svc.replaceChildren(new Option(params.get("service"), params.get("service")));
    type.replaceChildren(new Option(params.get("type"), params.get("type")));
  } else {
    await listed;
    fillChoices();
  }
  $("t-last").value = params.get("last") || "";
  // The range shown: `from` and `to` as the URL names them (RFC 3339, or now-6h / now-30m /
  // now), "last" a shortcut for from=now-…; a brush zooms in (the range before kept for
  // "zoom out").
  let range = { from: params.get("from") || (LAST[$("t-last").value] ? "now-" + $("t-last").value : ""), to: params.get("to") || "" };
  const zooms = [];
  $("t-group").value = params.get("group") || "";
  $("t-tags").value = params.get("tags") || "";
  $("t-labels").value = params.get("labels") || "";
  let wantSample = params.get("si") || "";
  const sel = () => ({ service: svc.value, type: type.value, tags: words($("t-tags").value, /\s+/), labels: words($("t-labels").value, ",") });
  // The request of the latest choice: an older one still coming is cancelled, and an answer
  // that is not the latest's is never drawn (a slow grouping answered after a quick change).
  let latest = null;
  const draw = async () => {
    if (latest) latest.abort();
    const mine = latest = new AbortController();
    const s = sel();
    if (!s.type) { $("t-state").textContent = "no pprof captures listed yet"; return; }
    const from = instantOf(range.from), to = instantOf(range.to);
    if (from === null || to === null) { $("t-state").textContent = `not a time: ${from === null ? range.from : range.to} (2026-12-05T10:00:00Z, now-6h, now)`; return; }
    const u = new URLSearchParams(selId(s, from, to).slice(4));
    const si = $("t-sample").value || wantSample;
    if (si) u.append("sample_index", si);
    if ($("t-group").value) u.append("group_by", $("t-group").value);
    keepInHash("t", { service: s.service, type: s.type, si, from: range.from, to: range.to, group: $("t-group").value,
      tags: $("t-tags").value, labels: $("t-labels").value });
    $("t-state").textContent = "reading the captures…";
    const t0 = performance.now();
    let doc;
    try {
      doc = await getJSON("/api/series?" + u.toString(), "no-store", mine.signal);
    } catch (e) {
      if (latest !== mine || e.name === "AbortError") return;
      throw e;
    }
    if (latest !== mine) return;
    const ts = $("t-sample");
    if (ts.options.length !== doc.sample_types.length + 1) {
      ts.replaceChildren(new Option("default", ""), ...doc.sample_types.map((t) => new Option(`${t.type} (${t.unit})`, t.type)));
    }
    ts.value = si && doc.sample_types.some((t) => t.type === si) ? si : "";
    // The sample labels the captures carry, offered: to group by, and key=value to filter.
    offerLabels(doc.labels || []);
    wantSample = "";
    chart(doc, s, { from: from ? Date.parse(from) : null, to: to ? Date.parse(to) : null }, (a, b, n) => {
      // Zoomed in place: the range's line redrawn, its flamegraph below, the actions on it.
      zooms.push(range);
      range = { from: new Date(a).toISOString(), to: new Date(b).toISOString() };
      $("t-zoomout").hidden = false;
      pickRange(s, a, b, n, $("t-sample").value || si);
      draw().catch(showError);
    });
    const ms = Math.round(performance.now() - t0);
    $("t-state").textContent = `${doc.captures} captures · ${doc.sample_type} (${doc.unit})${doc.per_second ? " per second of recording" : ""}` +
      ` · totals from ${doc.from_records} records, ${doc.from_files + doc.from_cache} files` +
      (doc.unreadable.length ? ` · ${doc.unreadable.length} unreadable: ${doc.unreadable[0]}` : "") +
      (doc.left_out ? ` · the ${doc.left_out} oldest left out` : "") + ` · ${ms} ms`;
    $("t-chart").dataset.drawnMs = String(ms);
  };
  svc.onchange = () => { fillTypes(type.value); draw().catch(showError); };
  for (const c of ["t-type", "t-sample"]) $(c).onchange = () => draw().catch(showError);
  $("t-last").onchange = () => {
    range = { from: $("t-last").value ? "now-" + $("t-last").value : "", to: "" };
    zooms.length = 0;
    $("t-zoomout").hidden = true;
    draw().catch(showError);
  };
  $("t-zoomout").hidden = true;
  $("t-zoomout").onclick = () => {
    range = zooms.pop() || { from: "", to: "" };
    $("t-zoomout").hidden = zooms.length === 0;
    draw().catch(showError);
  };
  for (const c of ["t-group", "t-tags", "t-labels"]) $(c).onchange = () => draw().catch(showError);
  $("t-range").hidden = true;
  await draw();
  if (named) listed.then(fillChoices);
}

// The chart: x the capture's time, y its total (per second when the type is a rate and
// every capture says how long it recorded); a line per group. Hover names the capture,
// a click opens it, a drag selects a range.
function chart(doc, s, domain, onBrush) {
  const box = $("t-chart");
  const W = Math.max(320, box.clientWidth || 900), H = 260, L = 78, R = 10, T = 10, B = 30;
  // CPU time per second of recording is cores busy.
  const cores = doc.per_second && doc.unit === "nanoseconds";
  const y = (p) => (doc.per_second && p.seconds > 0 ? p.value / p.seconds : p.value) / (cores ? 1e9 : 1);
  const fmt = (v) => cores ? `${+v.toFixed(3)} cores` : unitText(v, doc.unit) + (doc.per_second ? "/s" : "");
  const all = doc.groups.flatMap((g) => g.points.map((p) => ({ t: Date.parse(p.time), v: y(p), p, g: g.key })));
  const svg = svgEl("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "timeline" });
  if (!all.length) { box.replaceChildren(el("p", "no capture in this selection", "muted")); return; }
  let t0 = domain.from ?? Math.min(...all.map((a) => a.t)), t1 = domain.to ?? Math.max(...all.map((a) => a.t));
  if (t1 <= t0) { t0 -= 60e3; t1 += 60e3; }
  const vstep = roundStep(Math.max(...all.map((a) => a.v), 1e-9) / 4);
  const vmax = Math.ceil(Math.max(...all.map((a) => a.v), 1e-9) / vstep) * vstep;
  const X = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R), Yp = (v) => T + (1 - v / vmax) * (H - T - B);
  for (let v = 0; v <= vmax + vstep / 2; v += vstep) {
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: Yp(v), y2: Yp(v), class: "grid" }));
    svg.append(svgEl("text", { x: L - 4, y: Yp(v) + 4, "text-anchor": "end", class: "axis" }, fmt(v)));
  }
  const [tstep, label] = timeStep(t1 - t0);
  for (let t = Math.ceil(t0 / tstep) * tstep; t <= t1; t += tstep) {
    svg.append(svgEl("line", { x1: X(t), x2: X(t), y1: T, y2: H - B, class: "grid" }));
    svg.append(svgEl("text", { x: X(t), y: H - 8, "text-anchor": "middle", class: "axis tick" }, label(new Date(t))));
  }
  // The range kept as the base, where it falls on this chart.
  if (baseRange && baseRange.s.service === s.service && baseRange.s.type === s.type) {
    const a = Math.max(t0, Date.parse(baseRange.from)), b = Math.min(t1, Date.parse(baseRange.to));
    if (b > a) svg.append(svgEl("rect", { x: X(a), width: X(b) - X(a), y: T, height: H - T - B, class: "base-range" }));
  }
  const legend = [];
  doc.groups.forEach((g, gi) => {
    const c = COLORS[gi % COLORS.length];
    const pts = g.points.map((p) => `${X(Date.parse(p.time)).toFixed(1)},${Yp(y(p)).toFixed(1)}`).join(" ");
    svg.append(svgEl("polyline", { points: pts, fill: "none", stroke: c, "stroke-width": 1.5 }));
    if (g.points.length <= 1500) for (const p of g.points) svg.append(svgEl("circle", { cx: X(Date.parse(p.time)), cy: Yp(y(p)), r: 2.5, fill: c }));
    legend.push([c, `${g.key} (${g.points.length})`]);
  });
  const cursor = svgEl("line", { y1: T, y2: H - B, class: "cursor", visibility: "hidden" });
  const band = svgEl("rect", { y: T, height: H - T - B, class: "brush", visibility: "hidden" });
  svg.append(band, cursor);
  box.replaceChildren(svg);
  $("t-legend").replaceChildren(...legend.map(([c, t]) => { const sp = el("span", t); sp.style.borderLeft = `10px solid ${c}`; return sp; }));
  const sorted = all.slice().sort((a, b) => a.t - b.t);
  const tAt = (px) => t0 + ((px - L) / (W - L - R)) * (t1 - t0);
  const nearest = (t) => {
    let lo = 0, hi = sorted.length - 1;
    while (lo < hi) { const m = (lo + hi) >> 1; if (sorted[m].t < t) lo = m + 1; else hi = m; }
    const c = [sorted[lo], sorted[lo - 1]].filter(Boolean);
    return c.sort((a, b) => Math.abs(a.t - t) - Math.abs(b.t - t))[0];
  };
  const px = (ev) => { const r = svg.getBoundingClientRect(); return Math.min(W - R, Math.max(L, ((ev.clientX - r.left) * W) / r.width)); };
  let down = null;
  svg.onmousemove = (ev) => {
    const x = px(ev), n = nearest(tAt(x));
    cursor.setAttribute("x1", X(n.t)); cursor.setAttribute("x2", X(n.t)); cursor.setAttribute("visibility", "visible");
    $("t-tip").textContent = `${n.p.time} · ${n.g} · ${fmt(n.v)}` +
      (n.p.seconds ? ` over ${n.p.seconds.toFixed(1)} s` : "") + " · click to open";
    if (down !== null) {
      band.setAttribute("x", Math.min(down, x)); band.setAttribute("width", Math.abs(x - down)); band.setAttribute("visibility", "visible");
    }
  };
  svg.onmousedown = (ev) => { down = px(ev); band.setAttribute("visibility", "hidden"); ev.preventDefault(); };
  svg.onmouseup = (ev) => {
    const x = px(ev), start = down;
    down = null;
    if (start === null) return;
    if (Math.abs(x - start) < 4) { location.hash = "#/p?" + q({ id: nearest(tAt(x)).p.id }); return; }
    const a = tAt(Math.min(start, x)), b = tAt(Math.max(start, x));
    onBrush(a, b, all.filter((p) => p.t >= a && p.t < b).length);
  };
  svg.dataset.points = String(all.length);
}

// A range brushed (ms since the epoch): its captures merged, or compared with another.
function pickRange(s, a, b, n, si) {
  const iso = (t) => new Date(t).toISOString();
  brushed = { s, from: iso(a), to: iso(b) };
  // The range's top functions and flamegraph, under the chart, drawn in place; a row opens
  // the range's profile focused on its function.
  const rangeId = selId(s, brushed.from, brushed.to);
  loadFlame("t-flame", "/api/flamegraph.svg?" + q({ id: rangeId, sample_index: si }), "");
  const table = $("t-top");
  table.tBodies[0].replaceChildren();
  table.dataset.id = rangeId;
  getJSON("/api/top?" + q({ id: rangeId, sample_index: si, nodes: 10 })).then((doc) => {
    if (table.dataset.id !== rangeId) return;
    topTable(table, doc.report, (fn) => { location.hash = "#/p?" + q({ id: rangeId, si, focus: exactly(fn) }); });
  }).catch(showError);
  $("t-range").hidden = false;
  $("t-range-text").textContent = `${iso(a)} – ${iso(b)}: ${n} captures`;
  const open = (id, base) => { location.hash = base ? "#/d?" + q({ base, id }) : "#/p?" + q({ id }); };
  const shifted = (d) => selId(s, iso(a - d), iso(b - d));
  const id = selId(s, brushed.from, brushed.to);
  $("t-merge").onclick = () => open(id);
  $("t-prev").onclick = () => open(id, shifted(b - a));
  $("t-hour").onclick = () => open(id, shifted(3600e3));
  $("t-day").onclick = () => open(id, shifted(86400e3));
  $("t-base").onclick = () => { baseRange = { id, s, from: brushed.from, to: brushed.to }; $("t-vsbase").hidden = false; };
  $("t-vsbase").hidden = !baseRange;
  $("t-vsbase").onclick = () => open(id, baseRange.id);
}

async function route() {
  showError(null);
  current = null;
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query || "");
  const views = { "/": "list-view", "/t": "timeline-view", "/p": "profile-view", "/d": "diff-view", "/s": "pstats-view" };
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
    else if (path === "/t") await showTimeline(params);
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
  listed = listing;
  route();
  await listing;
  // New captures appear without a reload.
  setInterval(refresh, 3000);
});
