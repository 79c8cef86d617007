// usage: node transport.js ORIGIN TRANSPORT
// Two browsers open the demo page forcing TRANSPORT; one sends a chat line and both must
// receive it, over the transport asked for. Prints {"transport", "used": [..], "ms"}.
'use strict';

const { launch, newPage, run } = require('./chromium');

async function main() {
  const [origin, transport] = process.argv.slice(2);
  const started = Date.now();
  const logs = [];
  const browser = await launch();
  try {
    const url = `${origin}/?transport=${encodeURIComponent(transport)}`;
    const pages = await Promise.all([newPage(browser, logs), newPage(browser, logs)]);
    await Promise.all(pages.map((page) => page.goto(url)));
    try {
      await Promise.all(pages.map((page) => page.locator('#state[data-state="open"]').waitFor()));
    } catch (error) {
      throw new Error(`${transport} did not open: ${error.message}\n${logs.join('\n')}`);
    }
    const used = await Promise.all(pages.map((page) => page.locator('#transport').textContent()));
    const line = `probe over ${transport} ${Math.random().toString(36).slice(2)}`;
    await pages[0].fill('#chat-input', line);
    await pages[0].click('#chat-send');
    try {
      await Promise.all(pages.map((page) => page.locator('#log li', { hasText: line }).waitFor()));
    } catch (error) {
      throw new Error(`${transport}: message not received by both pages: ${error.message}\n${logs.join('\n')}`);
    }
    return { transport, used, ms: Date.now() - started };
  } finally {
    await browser.close();
  }
}

run(main);
