// usage: node counter.js ORIGIN PUBLISH_TOKEN
// A page with the shipped client, broker-client.js, following the counter "raised" with
// oncounter, while this script adds 0.01 to it 200 times from 8 backends at once; then its
// connection is cut, 100 more adds go in while it comes back. Prints what the page showed
// each time the counter reached the exact total: {"first", "after reconnect", "shown", "opens",
// "messages", "errors"}.
'use strict';

const { launch, clientPage, run } = require('./chromium');

const WAIT_MS = 30000;

async function addCents(origin, token, times, backends) {
  const backend = async () => {
    for (let i = 0; i < times / backends; i += 1) {
      const response = await fetch(`${origin}/publish?key=raised&op=add`, {
        method: 'POST', headers: { Authorization: `Bearer ${token}` }, body: '0.01',
      });
      if (response.status !== 200) throw new Error(`POST /publish: ${response.status} ${await response.text()}`);
    }
  };
  await Promise.all(Array.from({ length: backends }, backend));
}

async function main() {
  const [origin, token] = process.argv.slice(2);
  const logs = [];
  const browser = await launch();
  try {
    const page = await clientPage(browser, logs, origin, 'counter');
    await page.evaluate((url) => {
      window.shown = [];
      window.messages = [];
      window.opens = 0;
      window.client = new BrokerClient(url, {
        oncounter: (name, value) => window.shown.push([name, value]),
        onmessage: (message) => window.messages.push(message),
        onstatechange: (state) => { if (state === 'open') window.opens += 1; },
      });
    }, `${origin}/broadcast`);
    await page.waitForFunction(() => window.opens === 1, null, { timeout: WAIT_MS });
    const reached = (total) => page.waitForFunction(
      (t) => window.shown.length && window.shown[window.shown.length - 1][1] === t, total,
      { timeout: WAIT_MS, polling: 50 });
    await addCents(origin, token, 200, 8);
    await reached('2.00');
    const first = await page.evaluate(() => window.shown[window.shown.length - 1][1]);
    await page.evaluate(() => window.client._sock.close());
    await addCents(origin, token, 100, 4);
    await reached('3.00');
    await page.waitForFunction(() => window.opens === 2, null, { timeout: WAIT_MS });
    const seen = await page.evaluate(() => ({ shown: window.shown, opens: window.opens, messages: window.messages }));
    return {
      first,
      'after reconnect': seen.shown[seen.shown.length - 1][1],
      shown: seen.shown,
      opens: seen.opens,
      messages: seen.messages,
      errors: logs.filter((line) => line.startsWith('pageerror') || line.startsWith('error')),
    };
  } finally {
    await browser.close();
  }
}

run(main);
