// usage: [BROKER_TOKEN=JWT] node readme_example.js ORIGIN PUBLISH_TOKEN HTML [ROOM]
// A broker-client.js example of the README or the docs, as written, on a page of its own origin: a backend
// publishes (in ROOM if given) until the page's console says it received a message. The page's
// own site answers /broker-token with BROKER_TOKEN, as its backend would. Prints {"console": [...]}.
'use strict';

const { launch, newPage, run, DEADLINE_MS } = require('./chromium');

const PAGE = 'http://app.localhost/';

async function main() {
  const [origin, token, html, room] = process.argv.slice(2);
  const target = room === undefined ? `${origin}/publish` : `${origin}/publish?room=${encodeURIComponent(room)}`;
  const logs = [];
  const browser = await launch();
  try {
    const page = await newPage(browser, logs);
    await page.context().grantPermissions(['local-network-access']);
    await page.route(PAGE, (route) => route.fulfill({ contentType: 'text/html', body: html }));
    await page.route(`${PAGE}broker-token`, (route) => route.fulfill(process.env.BROKER_TOKEN
      ? { contentType: 'text/plain', body: process.env.BROKER_TOKEN } : { status: 403, body: 'not signed in' }));
    await page.goto(PAGE);
    const deadline = Date.now() + DEADLINE_MS;
    for (let n = 0; !logs.some((line) => line.includes('received')); n += 1) {
      if (Date.now() > deadline) throw new Error(`nothing received\n${logs.join('\n')}`);
      const response = await fetch(target, {
        method: 'POST', headers: { Authorization: `Bearer ${token}` }, body: `from a backend ${n}`,
      });
      if (response.status !== 200) throw new Error(`POST /publish: ${response.status}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    return { console: logs };
  } finally {
    await browser.close();
  }
}

run(main);
