// Checks the HTML report in headless Chromium at 1300 px: what the page rendered (charts,
// bars, console messages), and its layout: every chart sits where it should and no text
// overlaps a whisker or other text. Prints one JSON object; the Rust test
// (tests/demo_report.rs) asserts on it.
//   node report_layout.js REPORT.html SCREENSHOT.png   (or an http:// URL for REPORT.html)
const { chromium } = require("playwright-core");
const { layout } = require("./layout");

(async () => {
  const [page_path, shot] = process.argv.slice(2);
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
  await page.goto(/^https?:/.test(page_path) ? page_path : "file://" + page_path);
  const result = await layout(page);
  if (shot) {
    await page.screenshot({ path: shot, fullPage: true });
  }
  await browser.close();
  console.log(JSON.stringify({ ...result, console: console_messages }));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
