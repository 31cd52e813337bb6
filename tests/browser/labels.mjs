// How flamegraph frames are labelled once the SVG's own script has fitted the labels to the
// page's width: for each SVG named in the plan, the frames' width in pixels and every frame's
// width (% of them), its
// title (the whole name and figures) and the label shown. Printed as one JSON document.
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const browser = await chromium.launch({ executablePath: plan.chromium, args: ["--no-sandbox"] });
const seen = { svgs: {}, console_errors: [] };
try {
  const page = await browser.newPage({ viewport: { width: plan.width, height: 900 } });
  page.on("console", (m) => { if (m.type() === "error") seen.console_errors.push(m.text()); });
  page.on("pageerror", (e) => seen.console_errors.push(String(e)));
  for (const [name, file] of Object.entries(plan.svgs)) {
    await page.goto("file://" + file);
    // The script fits the labels after its load, in a timeout of 0: one queued after it
    // runs once they are fitted.
    await page.evaluate(() => new Promise((r) => setTimeout(r, 0)));
    seen.svgs[name] = await page.evaluate(() => ({
      // The frames' width in pixels, as the script has set it to the page's.
      width: parseFloat(document.getElementById("frames").attributes.width.value),
      frames: [...document.querySelectorAll("#frames g")].map((g) => [
        parseFloat(g.querySelector("rect").getAttribute("width")),
        g.querySelector("title").textContent,
        g.querySelector("text").textContent,
      ]),
    }));
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
