// agentprof ui in a real browser (the system's Chromium, driven by playwright-core), as
// tests/cli/ui.rs asks: node ui.mjs PLAN.json. The plan names the page, the profiles to
// open and compare, what the page must show, and where the screenshots go. Prints one
// JSON document of what it saw; exits 1 with the reason when the page does not behave.
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const seen = { screenshots: [], console_errors: [] };
const fail = (why) => { throw new Error(why); };

const browser = await chromium.launch({
  executablePath: plan.chromium,
  // Sandboxed frames stay in the page's process: with Chromium's own isolation of them, a
  // flamegraph frame that navigates is re-attached under the same id, which playwright-core
  // 1.65 asserts against (FrameManager.frameAttached) and the run dies, 2 runs in 7 here.
  // What the page does is the same either way.
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-features=IsolateSandboxedIframes"],
  timeout: 30000,
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1700 } });
  page.setDefaultTimeout(15000);
  page.on("console", (m) => { if (m.type() === "error") seen.console_errors.push(m.text()); });
  page.on("pageerror", (e) => seen.console_errors.push(String(e)));
  // Anything the page asks for from elsewhere is a failure: it must work offline.
  const outside = [];
  page.on("request", (r) => { if (!r.url().startsWith(plan.base)) outside.push(r.url()); });
  // A view reached by its URL's hash is the same document: wait for this view's own title
  // and rows, never the rows of the view before.
  const shown = (title, id, rows) => page.waitForFunction(([t, i, r]) =>
    document.querySelector(t).textContent === i && document.querySelectorAll(r).length > 0, [title, id, rows]);
  const shot = async (name) => {
    const path = `${plan.artefacts}/${name}.png`;
    await page.screenshot({ path, fullPage: false });
    seen.screenshots.push(path);
  };

  // The list.
  const t0 = Date.now();
  await page.goto(plan.base + "/");
  await page.waitForFunction((n) => document.querySelectorAll("#profiles tbody tr[data-id]").length >= n, plan.listed);
  seen.list_ms = Date.now() - t0;
  seen.listed = await page.locator("#profiles tbody tr[data-id]").count();
  seen.causes = await page.locator("#profiles tbody tr[data-id] td:nth-child(4)").allTextContents();
  seen.triggers = await page.locator("#profiles tbody tr[data-id] td:nth-child(5)").allTextContents();
  await shot("list");

  // Filter by type, then open the profile.
  await page.selectOption("#f-type", plan.open.type);
  seen.filtered = await page.locator("#profiles tbody tr[data-id]").count();
  await page.locator(`#profiles tbody tr[data-id="${plan.open.id}"] a`).click();
  await page.waitForFunction(() => document.querySelectorAll("#p-top tbody tr").length > 0);
  seen.top_rows = await page.$$eval("#p-top tbody tr", (rows) =>
    rows.map((r) => [...r.cells].map((c) => c.textContent)));
  // The flamegraph, drawn and searchable (inferno's own search, in its sandboxed frame).
  const flame = page.frameLocator("#p-flame");
  await flame.locator("svg #frames g").first().waitFor();
  const frame = page.frames().find((f) => f.url().includes("/api/flamegraph.svg"));
  seen.flame_frames = await frame.evaluate(() => document.querySelectorAll("#frames g").length);
  // The labels the frame's script wrote (names, cut to fit), wide frames first.
  seen.flame_labels = await frame.evaluate(() =>
    [...document.querySelectorAll("#frames g")]
      .map((g) => [parseFloat(g.querySelector("rect").getAttribute("fg:w")), g.querySelector("text").textContent])
      .sort((a, b) => b[0] - a[0]).slice(0, 10).map((l) => l[1]));
  // Search as a user does: typed into the page's box, the frame highlights the matches as
  // the text arrives, in place (no flamegraph fetched again); Enter keeps it in the view's
  // URL; then the SVG's own Search button, whose dialog the frame may open.
  let svgFetches = 0;
  page.on("request", (r) => { if (r.url().includes("/api/flamegraph.svg")) svgFetches++; });
  await page.fill("#p-search", plan.open.search);
  await frame.waitForFunction(() => /matched:/.test(document.getElementById("matched").textContent));
  seen.flame_search = await frame.evaluate(() => document.getElementById("matched").textContent);
  await page.waitForFunction(() => /%/.test(document.getElementById("p-search-state").textContent));
  seen.search_state = await page.textContent("#p-search-state");
  await page.press("#p-search", "Enter");
  await page.waitForFunction(() => /[?&]s=/.test(decodeURIComponent(location.hash)));
  seen.search_in_hash = decodeURIComponent(new URL(page.url()).hash);
  seen.search_fetches = svgFetches;
  const sframe = frame;
  await sframe.evaluate(() => search_prompt());  // Reset Search (no dialog)
  page.once("dialog", (d) => d.accept(plan.open.search));
  await page.frameLocator("#p-flame").locator("#search").click();
  await sframe.waitForFunction(() => /matched:/.test(document.getElementById("matched").textContent));
  seen.flame_button_search = await sframe.evaluate(() => document.getElementById("matched").textContent);
  // go tool pprof's -focus, -peek and -list from the table, as a user reaches them: a click
  // on a row, then the action.
  const cells = (sel) => page.$$eval(sel, (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  await page.locator("#p-top tbody tr", { hasText: plan.views.pick }).first().click();
  await page.locator("#p-act").waitFor({ state: "visible" });
  seen.picked = await page.textContent("#p-act-name");
  await page.click('#p-act button[data-act="focus"]');
  await page.waitForFunction(() => /focus=/.test(location.hash) &&
    /Active filters:/.test(document.getElementById("p-header").textContent));
  seen.focus_hash = decodeURIComponent(new URL(page.url()).hash);
  seen.focus_header = await page.textContent("#p-header");
  seen.focus_rows = await cells("#p-top tbody tr");
  await page.waitForFunction(() => /focus=/.test(document.getElementById("p-flame").src));
  seen.focus_flame_src = decodeURIComponent(await page.getAttribute("#p-flame", "src"));
  await page.click('#p-act button[data-act="peek"]');
  await page.waitForFunction(() => document.querySelectorAll("#p-detail-body tr.self").length > 0);
  seen.peek_rows = await cells("#p-detail-body tbody tr");
  seen.peek_hash = decodeURIComponent(new URL(page.url()).hash);
  await page.click('#p-act button[data-act="list"]');
  await page.waitForFunction(() => document.querySelectorAll("#p-detail-body h4").length > 0);
  seen.source_heads = await page.$$eval("#p-detail-body h4", (h) => h.map((x) => x.textContent));
  seen.source_rows = await cells("#p-detail-body tbody tr");
  seen.source_note = await page.textContent("#p-detail-header");
  await shot("views");
  // A right-click on a frame of the (focused) flamegraph picks its function.
  const fframe = () => page.frames().find((f) => f.url().includes("/api/flamegraph.svg") && f.url().includes("focus="));
  await page.waitForFunction(() => true);
  await page.frameLocator("#p-flame").locator("svg #frames g").first().waitFor();
  const ff = fframe();
  const target = await ff.evaluate(() => {
    const gs = [...document.querySelectorAll("#frames g")];
    let best = -1, w = -1;
    gs.forEach((g, i) => {
      const t = g.querySelector("title").textContent;
      const fw = parseFloat(g.querySelector("rect").getAttribute("fg:w"));
      if (!t.startsWith("all ") && fw > w) { w = fw; best = i; }
    });
    return { index: best, title: gs[best].querySelector("title").textContent };
  });
  seen.flame_target = target.title;
  await page.evaluate(() => { document.getElementById("p-act-name").textContent = ""; });
  await page.frameLocator("#p-flame").locator("#frames g").nth(target.index).locator("rect").click({ button: "right", force: true });
  await page.waitForFunction(() => document.getElementById("p-act-name").textContent !== "");
  seen.flame_picked = await page.textContent("#p-act-name");
  await page.click("#p-clear");
  await page.waitForFunction(() => !/Active filters:/.test(document.getElementById("p-header").textContent) &&
    !/focus=/.test(location.hash));
  seen.cleared_rows = (await cells("#p-top tbody tr")).length;

  // The view's settings go into its URL, and do not carry over to the next profile.
  await page.selectOption("#p-sort", "cum");
  await page.waitForFunction(() => /sort=cum/.test(location.hash));
  seen.sort_in_hash = decodeURIComponent(new URL(page.url()).hash);
  await shot("profile");

  // Compare with the scheduled capture before the triggered one, in one click.
  await page.goto(`${plan.base}/#/p?id=${encodeURIComponent(plan.compare.id)}`);
  await shown("#p-title", plan.compare.id, "#p-top tbody tr");
  seen.next_profile_sort = await page.inputValue("#p-sort");
  // The button comes with the listing, which the table does not wait for.
  seen.previous_button = await page.locator("#p-previous").waitFor({ state: "visible" }).then(() => true, () => false);
  await page.locator("#p-previous").click();
  await page.waitForFunction(() => document.querySelectorAll("#d-table tbody tr").length > 0);
  seen.diff_hash = decodeURIComponent(new URL(page.url()).hash);
  seen.diff_rows = await page.$$eval("#d-table tbody tr", (rows) =>
    rows.map((r) => [...r.cells].map((c) => c.textContent)));
  await page.frameLocator("#d-flame").locator("svg #frames g").first().waitFor();
  await shot("diff");

  // The profile whose names are markup: shown as text, nothing runs.
  await page.goto(`${plan.base}/#/p?id=${encodeURIComponent(plan.evil.id)}`);
  await shown("#p-title", plan.evil.id, "#p-top tbody tr");
  seen.evil_functions = await page.$$eval("#p-top tbody td.fn", (cells) => cells.map((c) => c.textContent));
  seen.evil_images = await page.evaluate(() => document.querySelectorAll("img").length);
  await page.frameLocator("#p-flame").locator("svg #frames g").first().waitFor();
  const evilFrame = page.frames().find((f) => f.url().includes("/api/flamegraph.svg"));
  seen.evil_frame_images = await evilFrame.evaluate(() => document.querySelectorAll("img").length);
  seen.pwned = await page.evaluate(() => window.pwned === 1) ||
    await evilFrame.evaluate(() => window.pwned === 1);
  await shot("markup");

  // A profile that cannot be read: its error, and no flamegraph of the profile before.
  await page.goto(`${plan.base}/#/p?id=${encodeURIComponent(plan.bad.id)}`);
  await page.waitForFunction(() => /no flamegraph/.test(document.getElementById("p-flame-state").textContent));
  seen.bad_flame_state = await page.textContent("#p-flame-state");
  seen.bad_frame_hidden = await page.evaluate(() => document.getElementById("p-flame").hidden);
  seen.bad_error = await page.textContent("#error");

  // A phone's width: nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${plan.base}/#/p?id=${encodeURIComponent(plan.open.id)}`);
  await shown("#p-title", plan.open.id, "#p-top tbody tr");
  seen.phone_overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await shot("phone");
  await page.setViewportSize({ width: 1400, height: 1700 });

  // A term typed while the flamegraph is still on its way to its frame (a large one takes
  // seconds) is searched once it has arrived: posted before the SVG's script listened, it
  // was lost. The frame's SVG is held back until the term is typed.
  let release, onAsked;
  const held = new Promise((r) => { release = r; });
  const asked = new Promise((r) => { onAsked = r; });
  await page.route("**/api/flamegraph.svg**", async (route) => {
    if (route.request().resourceType() === "document") { onAsked(); await held; }
    await route.continue();
  });
  await page.reload();
  await asked;
  await page.fill("#p-search", plan.open.search);
  await page.waitForFunction(() => /%/.test(document.getElementById("p-search-state").textContent));
  release();
  await page.frameLocator("#p-flame").locator("svg #frames g").first().waitFor();
  const late = page.frames().find((f) => f.url().includes("/api/flamegraph.svg"));
  await late.waitForFunction(() => /matched:/.test(document.getElementById("matched").textContent));
  seen.flame_search_while_loading = await late.evaluate(() => document.getElementById("matched").textContent);
  await page.unroute("**/api/flamegraph.svg**");

  // A pstats dump as pstats' table, sorted by a click.
  if (plan.pstats) {
    await page.goto(`${plan.base}/#/s?id=${encodeURIComponent(plan.pstats.id)}`);
    await shown("#s-title", plan.pstats.id, "#s-table tbody tr");
    await page.locator('#s-table th[data-sort="tottime"]').click();
    await page.waitForFunction(() => /internal time/.test(document.getElementById("s-meta").textContent));
    seen.pstats_rows = await page.$$eval("#s-table tbody tr", (rows) =>
      rows.map((r) => [...r.cells].map((c) => c.textContent)));
    await shot("pstats");
  }

  // Traversal, asked by the page's own origin.
  seen.traversal = [];
  for (const p of plan.traversal) {
    const r = await page.request.get(plan.base + p);
    seen.traversal.push([p, r.status()]);
  }
  seen.outside_requests = outside;
} catch (e) {
  seen.error = String(e && e.stack || e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
process.exit(seen.error ? 1 : 0);
