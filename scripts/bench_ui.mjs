// For scripts/bench_ui.py: node bench_ui.mjs BASE ID — opens the profile's page in the
// system's Chromium (tests/browser's playwright-core) and prints, as medians of 5 loads,
// the milliseconds from navigation to the top table and to the flamegraph drawn.
import { createRequire } from "node:module";
const require = createRequire(new URL("../tests/browser/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const [base, id] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.AGENTPROF_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
const tops = [], flames = [];
try {
  for (let i = 0; i < 5; i++) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const t0 = Date.now();
    await page.goto(`${base}/#/p?id=${encodeURIComponent(id)}`);
    await page.waitForFunction(() => document.querySelectorAll("#p-top tbody tr").length > 0, null, { timeout: 60000 });
    tops.push(Date.now() - t0);
    await page.frameLocator("#p-flame").locator("svg #frames g").first().waitFor({ timeout: 60000 });
    flames.push(Date.now() - t0);
    await page.close();
  }
} finally {
  await browser.close();
}
const med = (v) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)];
console.log(JSON.stringify({ top_table_ms: med(tops), flamegraph_drawn_ms: med(flames), loads: tops.length }));
