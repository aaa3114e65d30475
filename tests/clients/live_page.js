// The live page of a running psprobe in headless Chromium at 1300 px: the report's layout checks
// (layout.js), the headline tables' figures as shown with the page's entity tag, and console
// messages; given WAIT_MS, also that the page refreshes itself when a segment finishes (its
// entity tag changes within WAIT_MS and its charts are still laid out right). Prints one JSON
// object; the Rust test (tests/live_page.rs) asserts on it.
//   node live_page.js URL SCREENSHOT.png [WAIT_MS]
const { layout, openPage } = require("./layout");

// The entity tag the page shows, and each headline table's rows as {header: cell text}.
function read(page) {
  return page.evaluate(() => {
    const status = document.getElementById("live-status");
    const tables = [...document.querySelectorAll("table")].filter((t) =>
      [...t.querySelectorAll("th")].some((th) => th.textContent.startsWith("statements/s change"))
    );
    const rows = [];
    for (const t of tables) {
      const headers = [...t.querySelectorAll("th")].map((th) => th.textContent);
      for (const tr of t.querySelectorAll("tr")) {
        const cells = [...tr.querySelectorAll("td")].map((td) => td.textContent);
        if (cells.length === headers.length) {
          rows.push(Object.fromEntries(headers.map((h, i) => [h, cells[i]])));
        }
      }
    }
    return {
      etag: status ? status.getAttribute("data-etag") : null,
      waiting: document.getElementById("live-waiting")?.textContent ?? null,
      rows,
    };
  });
}

(async () => {
  const [url, shot, wait] = process.argv.slice(2);
  const { browser, page, console_messages } = await openPage();
  // Nothing but psprobe is asked for anything: the page works offline.
  const elsewhere = [];
  page.on("request", (r) => {
    if (!r.url().startsWith(new URL(url).origin) && !r.url().startsWith("data:")) {
      elsewhere.push(r.url());
    }
  });
  await page.goto(url);
  const first = await read(page);
  const laid = await layout(page);
  if (shot) {
    await page.screenshot({ path: shot, fullPage: true });
  }
  let refreshed = null;
  if (wait) {
    await page.waitForFunction(
      (etag) => document.getElementById("live-status")?.getAttribute("data-etag") !== etag,
      first.etag,
      { timeout: Number(wait), polling: 200 }
    );
    refreshed = { ...(await read(page)), layout: await layout(page) };
  }
  await browser.close();
  console.log(
    JSON.stringify({ first, layout: laid, refreshed, elsewhere, console: console_messages })
  );
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
