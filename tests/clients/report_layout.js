// Checks the HTML report in headless Chromium at 1300 px: what the page rendered (charts,
// bars, console messages), and its layout: every chart sits where it should and no text
// overlaps a whisker or other text. Prints one JSON object; the Rust test
// (tests/demo_report.rs) asserts on it.
//   node report_layout.js REPORT.html SCREENSHOT.png   (or an http:// URL for REPORT.html)
const { layout, openPage } = require("./layout");

(async () => {
  const [page_path, shot] = process.argv.slice(2);
  const { browser, page, console_messages } = await openPage();
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
