// What the report's page rendered, measured in the browser: its charts (titles, bars) and their
// layout (every chart under the title, no text over a whisker or other text, nothing outside its
// chart, no horizontal scroll). Shared by report_layout.js and live_page.js.
async function layout(page) {
  return page.evaluate(() => {
    const box = (el) => {
      const r = el.getBoundingClientRect();
      return { x0: r.left, y0: r.top, x1: r.right, y1: r.bottom };
    };
    const overlap = (a, b) =>
      Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 0.5 &&
      Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 0.5;
    const problems = [];
    const charts = [...document.querySelectorAll("svg.chart")];
    for (const [i, svg] of charts.entries()) {
      const title = svg.querySelector("title")?.textContent ?? "chart " + i;
      const texts = [...svg.querySelectorAll("text")].map((t) => ({
        text: t.textContent,
        cls: t.getAttribute("class"),
        box: box(t),
      }));
      const whiskers = [...svg.querySelectorAll(".whisker, .whisker-end")].map(box);
      for (let a = 0; a < texts.length; a++) {
        for (let b = a + 1; b < texts.length; b++) {
          if (overlap(texts[a].box, texts[b].box)) {
            problems.push(`${title}: "${texts[a].text}" overlaps "${texts[b].text}"`);
          }
        }
        for (const w of whiskers) {
          if (overlap(texts[a].box, w)) {
            problems.push(`${title}: "${texts[a].text}" overlaps a whisker`);
          }
        }
      }
      const svgBox = box(svg);
      for (const t of texts) {
        if (t.box.x0 < svgBox.x0 - 0.5 || t.box.x1 > svgBox.x1 + 0.5) {
          problems.push(`${title}: "${t.text}" runs outside the chart`);
        }
      }
      const ticks = texts.filter((t) => t.cls === "axis").map((t) => t.text);
      if (ticks.length < 3) {
        problems.push(`${title}: ${ticks.length} axis labels`);
      }
    }
    const h1 = document.querySelector("h1");
    const first = charts[0];
    const firstUnderTitle =
      !!h1 &&
      !!first &&
      h1.nextElementSibling === first &&
      box(first).y0 - box(h1).y1 < 60;
    return {
      bars: document.querySelectorAll(".bar").length,
      bands: document.querySelectorAll(".band").length,
      points: document.querySelectorAll("circle.point").length,
      published: document.querySelectorAll("circle.published").length,
      charts: charts.length,
      titles: charts.map((c) => c.querySelector("title")?.textContent),
      firstUnderTitle,
      problems,
      width: document.documentElement.scrollWidth,
    };
  });
}

// Headless Chromium at the reports' 1300 px, every console message and page error collected.
async function openPage() {
  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({
    executablePath: process.env.PSPROBE_CHROMIUM || "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  const console_messages = [];
  page.on("console", (m) => console_messages.push(m.text()));
  page.on("pageerror", (e) => console_messages.push(String(e)));
  return { browser, page, console_messages };
}

module.exports = { layout, openPage };
