// agentprof ui's time views in a real browser (the system's Chromium, driven by
// playwright-core), as tests/cli/ui_range.rs asks: node timeline.mjs PLAN.json. A
// service's timeline drawn, hovered and brushed; the range opened merged and seen as a
// flamegraph, an icicle, a call graph and a sandwich, with functions ticked together;
// the range compared with the one before; the timeline grouped; a large flamegraph opened
// and searched. Prints one JSON document of what it saw (with times in ms); exits 1 with
// the reason when the page does not behave. With `bench` in the plan it stops after the
// range merged (examples/ui_bench.rs measures a week of captures).
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const seen = { screenshots: [], console_errors: [] };

// A large flamegraph: opened from the list (the page asks for the table and the picture at
// once) until its frames and its search are there, then searched from the page's box.
async function largeFlame(page, plan, seen, shot, frameOf) {
  let t0 = Date.now();
  await page.goto(`${plan.base}/#/p?id=${encodeURIComponent(plan.large.id)}` +
    (plan.large.frames ? `&frames=${plan.large.frames}` : ""));
  await page.frameLocator("#p-flame").locator("svg #frames g").first().waitFor({ timeout: 120000 });
  const big = frameOf("/api/flamegraph.svg");
  await big.waitForFunction(() => typeof search === "function");
  seen.large_open_ms = Date.now() - t0;
  seen.large_frames = await big.evaluate(() => document.querySelectorAll("#frames g").length);
  seen.large_subtitle = await big.evaluate(() => (document.getElementById("subtitle") || {}).textContent || "");
  seen.large_state = await page.textContent("#p-flame-state");
  t0 = Date.now();
  await page.fill("#p-search", plan.large.search);
  await big.waitForFunction(() => /matched:/.test(document.getElementById("matched").textContent));
  seen.large_search_ms = Date.now() - t0;
  seen.large_matched = await big.evaluate(() => document.getElementById("matched").textContent);
  // The whole profile's share, folded frames included, said under the box.
  await page.waitForFunction(() => /%/.test(document.getElementById("p-search-state").textContent));
  seen.large_search_state = await page.textContent("#p-search-state");
  await shot("large");
  // A measurement (examples/ui_bench.rs --large) stops here.
  if (!plan.large.anchored) return;
  // Anchored, as go tool pprof's -focus takes it: the frame's name ends there.
  await page.fill("#p-search", plan.large.anchored);
  await page.waitForFunction((t) => document.getElementById("p-search-state").textContent.includes("%") &&
    !document.getElementById("p-search-state").textContent.includes(t.state), { state: seen.large_search_state });
  seen.anchored_state = await page.textContent("#p-search-state");
  seen.anchored_matched = await big.evaluate(() => document.getElementById("matched").textContent);
  await page.fill("#p-search", plan.large.nothing);
  await page.waitForFunction(() => /nothing matched/.test(document.getElementById("p-search-state").textContent));
  seen.nothing_state = await page.textContent("#p-search-state");
  await shot("large-searched");
}

const browser = await chromium.launch({
  executablePath: plan.chromium,
  // As ui.mjs: sandboxed frames in the page's process (playwright-core's frame tracking).
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-features=IsolateSandboxedIframes"],
  timeout: 30000,
});
// The page, for a screenshot of what it showed when a step failed.
let failedPage = null;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1500 } });
  failedPage = page;
  page.setDefaultTimeout(plan.timeout_ms || 20000);
  page.on("console", (m) => { if (m.type() === "error") seen.console_errors.push(m.text()); });
  page.on("pageerror", (e) => seen.console_errors.push(String(e)));
  const outside = [];
  page.on("request", (r) => { if (!r.url().startsWith(plan.base)) outside.push(r.url()); });
  const shot = async (name) => {
    const path = `${plan.artefacts}/${name}.png`;
    await page.screenshot({ path, fullPage: false });
    seen.screenshots.push(path);
  };
  const cells = (sel) => page.$$eval(sel, (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  const frameOf = (part) => page.frames().find((f) => f.url().includes(part));
  const timeline = `${plan.base}/#/t?service=${encodeURIComponent(plan.service)}&type=${encodeURIComponent(plan.type)}`;
  // Drags across the chart from one share of its width to another, at mid height.
  const brush = async (a, b) => {
    await page.locator("#t-chart svg").scrollIntoViewIfNeeded();
    const box = await page.locator("#t-chart svg").boundingBox();
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + box.width * a, y);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * ((a + b) / 2), y, { steps: 4 });
    await page.mouse.move(box.x + box.width * b, y, { steps: 4 });
    await page.mouse.up();
    await page.locator("#t-range").waitFor({ state: "visible" });
  };

  let t0 = Date.now();
  if (plan.large_only) {
    await page.goto(`${plan.base}/`);
    await page.waitForFunction(() => document.querySelectorAll("#profiles tbody tr[data-id]").length > 0);
    await largeFlame(page, plan, seen, shot, frameOf);
    throw "done";
  }
  // The timeline, from the page's load to its line drawn.
  await page.goto(timeline);
  await page.locator("#t-chart svg polyline").first().waitFor({ state: "visible" });
  seen.timeline_ms = Date.now() - t0;
  seen.timeline_request_ms = Number(await page.getAttribute("#t-chart", "data-drawn-ms"));
  seen.timeline_points = Number(await page.getAttribute("#t-chart svg", "data-points"));
  seen.timeline_state = await page.textContent("#t-state");
  const chart = await page.locator("#t-chart svg").boundingBox();
  await page.mouse.move(chart.x + chart.width * 0.5, chart.y + chart.height / 2);
  await page.waitForFunction(() => document.getElementById("t-tip").textContent !== "");
  seen.hover = await page.textContent("#t-tip");
  seen.y_ticks = await page.$$eval("#t-chart svg text.axis:not(.tick)", (t) => t.map((x) => x.textContent));
  seen.x_ticks = await page.$$eval("#t-chart svg text.tick", (t) => t.map((x) => x.textContent));
  await brush(plan.brush[0], plan.brush[1]);
  seen.range_text = await page.textContent("#t-range-text");
  // Zoomed in place: the range's captures alone on the chart, its flamegraph below, the
  // range in the URL.
  await page.waitForFunction((n) => Number(document.querySelector("#t-chart svg")?.dataset.points) < n, seen.timeline_points);
  seen.zoomed_points = Number(await page.getAttribute("#t-chart svg", "data-points"));
  seen.zoomed_hash = decodeURIComponent(new URL(page.url()).hash);
  await page.frameLocator("#t-flame").locator("svg #frames g").first().waitFor();
  seen.range_flame_src = decodeURIComponent(await page.getAttribute("#t-flame", "src"));
  await page.waitForFunction(() => document.querySelectorAll("#t-top tbody tr").length > 0);
  seen.range_top = await cells("#t-top tbody tr");
  await shot("timeline-brushed");
  await page.click("#t-zoomout");
  await page.waitForFunction((n) => Number(document.querySelector("#t-chart svg")?.dataset.points) === n, seen.timeline_points);
  seen.zoomed_out_hash = decodeURIComponent(new URL(page.url()).hash);

  // The range merged: its table, then each view.
  t0 = Date.now();
  await page.click("#t-merge");
  await page.waitForFunction(() => document.querySelectorAll("#p-top tbody tr").length > 0 &&
    /captures merged/.test(document.getElementById("p-meta").textContent));
  seen.merge_ms = Date.now() - t0;
  seen.merged_id = decodeURIComponent(new URL(page.url()).hash);
  seen.merged_meta = await page.textContent("#p-meta");
  seen.merged_header = await page.textContent("#p-header");
  seen.merged_rows = await cells("#p-top tbody tr");
  await page.frameLocator("#p-flame").locator("svg #frames g").first().waitFor();
  await shot("merged");
  // A measurement (examples/ui_bench.rs) stops here.
  if (plan.bench) throw "done";
  await page.selectOption("#p-view", "icicle");
  await page.waitForFunction(() => /icicle=true/.test(document.getElementById("p-flame").src));
  await page.frameLocator("#p-flame").locator("svg #frames g").first().waitFor();
  seen.icicle_src = decodeURIComponent(await page.getAttribute("#p-flame", "src"));
  await shot("icicle");
  await page.selectOption("#p-view", "graph");
  await page.waitForFunction(() => /graph\.svg/.test(document.getElementById("p-flame").src));
  await page.frameLocator("#p-flame").locator("g.node").first().waitFor();
  const graph = frameOf("/api/graph.svg");
  seen.graph_nodes = await graph.evaluate(() => [...document.querySelectorAll("g.node title")].map((t) => t.textContent));
  seen.graph_edges = await graph.evaluate(() => document.querySelectorAll("path.e").length);
  // Readable as it opens (its text at its own size or near it), zoomed by the wheel, a box
  // clicked to act on its function, a function searched highlighted.
  await graph.waitForFunction(() => document.documentElement.dataset.zoomable === "1");
  seen.graph_text_px = await graph.evaluate(() => Math.min(...[...document.querySelectorAll("g.node text")].slice(0, 30)
    .map((t) => t.getBoundingClientRect().height)));
  const viewBox = () => graph.evaluate(() => document.documentElement.getAttribute("viewBox"));
  const before = await viewBox();
  const fbox = await page.locator("#p-flame").boundingBox();
  await page.mouse.move(fbox.x + fbox.width / 2, fbox.y + fbox.height / 3);
  await page.mouse.wheel(0, -300);
  await graph.waitForFunction((b) => document.documentElement.getAttribute("viewBox") !== b, before);
  seen.graph_zoomed = [before, await viewBox()];
  await page.click('#p-graph-zoom button[data-zoom="fit"]');
  await graph.waitForFunction((b) => document.documentElement.getAttribute("viewBox") !== b, seen.graph_zoomed[1]);
  seen.graph_fit = await viewBox();
  const box = graph.locator("g.node").first();
  seen.graph_clicked = await box.locator("title").textContent();
  await box.locator("text").first().click();
  await page.locator("#p-act").waitFor({ state: "visible" });
  seen.graph_picked = await page.textContent("#p-act-name");
  await page.fill("#p-search", plan.pick.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  await graph.waitForFunction(() => Number(document.documentElement.dataset.matched) > 0);
  seen.graph_matched = Number(await graph.evaluate(() => document.documentElement.dataset.matched));
  await page.fill("#p-search", "");
  await shot("call-graph");
  await page.selectOption("#p-view", "flame");
  await page.waitForFunction(() => /flamegraph\.svg/.test(document.getElementById("p-flame").src));

  // One function's sandwich, from its row.
  await page.locator("#p-top tbody tr", { hasText: plan.pick }).first().click();
  await page.click('#p-act button[data-act="sandwich"]');
  await page.waitForFunction(() => document.querySelectorAll("#p-detail-body iframe.sandwich").length === 2);
  for (const side of ["callers", "callees"]) {
    await page.frameLocator(`#p-detail-body iframe[title="${side}"]`).locator("svg #frames g").first().waitFor();
  }
  seen.sandwich = {};
  for (const side of ["callers", "callees"]) {
    const f = page.frames().find((x) => x.url().includes("/api/sandwich.svg") && x.url().includes(`side=${side}`));
    seen.sandwich[side] = await f.evaluate(() => [...document.querySelectorAll("#frames g title")].map((t) => t.textContent).slice(0, 400));
  }
  seen.sandwich_hash = decodeURIComponent(new URL(page.url()).hash);
  await page.locator("#p-detail").scrollIntoViewIfNeeded();
  await shot("sandwich");
  await page.click("#p-detail-close");

  // Two functions ticked, focused on together.
  const ticks = page.locator("#p-top tbody input.tick");
  await ticks.nth(0).check();
  await ticks.nth(1).check();
  seen.multi_text = await page.textContent("#p-multi-text");
  seen.ticked = await page.$$eval("#p-top tbody tr", (rows) => rows.filter((r) => r.querySelector("input.tick").checked)
    .slice(0, 2).map((r) => r.cells[5].textContent));
  await page.click('#p-multi button[data-multi="focus"]');
  await page.waitForFunction(() => /Active filters:/.test(document.getElementById("p-header").textContent));
  seen.multi_focus = await page.inputValue("#p-focus");
  seen.multi_rows = await cells("#p-top tbody tr");

  // The range compared with the one before it, in one click.
  await page.goto(timeline);
  await page.locator("#t-chart svg polyline").first().waitFor({ state: "visible" });
  await brush(plan.compare[0], plan.compare[1]);
  t0 = Date.now();
  await page.click("#t-prev");
  await page.waitForFunction(() => document.querySelectorAll("#d-table tbody tr").length > 0);
  seen.compare_ms = Date.now() - t0;
  seen.compare_hash = decodeURIComponent(new URL(page.url()).hash);
  seen.compare_rows = await cells("#d-table tbody tr");
  await page.frameLocator("#d-flame").locator("svg #frames g").first().waitFor();
  const dframe = frameOf("/api/diff.svg");
  seen.diff_labels = await dframe.evaluate(() => [...document.querySelectorAll("#frames g")]
    .map((g) => [parseFloat(g.querySelector("rect").getAttribute("fg:w")), g.querySelector("text").textContent, g.querySelector("rect").getAttribute("fill")])
    .sort((a, b) => b[0] - a[0]).slice(0, 12));
  await page.locator("#d-flame").scrollIntoViewIfNeeded();
  await shot("compare");

  // Grouped by a capture tag.
  await page.goto(timeline + `&group=${encodeURIComponent(plan.group)}`);
  await page.waitForFunction(() => document.querySelectorAll("#t-legend span").length > 1);
  seen.legend = await page.$$eval("#t-legend span", (s) => s.map((x) => x.textContent));
  await shot("timeline-grouped");

  // The latest choice wins: ungrouped, then grouped again with its answer held back 1.5 s
  // and at once ungrouped; the held answer must not draw over the later one (it is
  // cancelled, or ignored when it comes).
  const group = async (g) => { await page.fill("#t-group", g); await page.dispatchEvent("#t-group", "change"); };
  await group("");
  await page.waitForFunction(() => document.querySelectorAll("#t-legend span").length <= 1);
  await page.route("**/api/series?**", async (route) => {
    if (route.request().url().includes("group_by=")) await new Promise((r) => setTimeout(r, 1500));
    await route.continue().catch(() => {});
  });
  const heldBack = new Promise((resolve) => {
    const done = (r) => { if (r.url().includes("/api/series?") && r.url().includes("group_by=")) resolve(r); };
    page.on("requestfailed", done);
    page.on("requestfinished", done);
  });
  await group(plan.group);
  await group("");
  await heldBack;
  // Whatever the held answer would draw, it would draw right after it came: wait for the
  // page to have taken in every answer (its state line says the last one's figures).
  await page.waitForFunction(() => !/reading/.test(document.getElementById("t-state").textContent));
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
  seen.race_legend = await page.$$eval("#t-legend span", (s) => s.map((x) => x.textContent));
  seen.race_group = await page.$eval("#t-group", (e) => e.value);
  await page.unroute("**/api/series?**");

  if (plan.large) await largeFlame(page, plan, seen, shot, frameOf);
  seen.outside_requests = outside;
} catch (e) {
  if (e !== "done") {
    seen.error = String(e && e.stack || e);
    const path = `${plan.artefacts}/failed.png`;
    if (failedPage) await failedPage.screenshot({ path }).then(() => seen.screenshots.push(path), () => {});
    if (failedPage) seen.failed_state = await failedPage.evaluate(() => ({ hash: location.hash,
      state: document.getElementById("t-state")?.textContent, error: document.getElementById("error")?.textContent,
      points: document.querySelector("#t-chart svg")?.dataset.points })).catch(() => null);
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
process.exit(seen.error ? 1 : 0);
