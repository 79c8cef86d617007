// usage: node dead_broker.js ORIGIN TRANSPORTS WAIT_MS MARKER [OPTIONS]
// One page per transport (comma-separated TRANSPORTS), each on its own origin with the
// shipped client, broker-client.js, at its defaults or with the OPTIONS given (JSON, such as
// {"heartbeatMs": 1000}), forced to that transport, logging every message it delivers, every
// gap it reports, and the time (Date.now()) of every open and close. Prints {"ready": true}
// once every page is open, then, once every page has delivered a message equal to MARKER, or
// WAIT_MS later, one line {"pages": {transport: {"log", "gaps", "opens", "closes",
// "silenceMs"}}}. The test kills or stops the broker and publishes between those lines.
'use strict';

const { launch, clientPage, run } = require('./chromium');

const OPEN_MS = 30000;

async function openPage(browser, logs, origin, transport, options) {
  const page = await clientPage(browser, logs, origin, transport);
  await page.evaluate(([url, transport, options]) => {
    window.log = [];
    window.gaps = [];
    window.opens = [];
    window.closes = [];
    window.client = new BrokerClient(url, {
      ...options,
      transports: [transport],
      onmessage: (message) => window.log.push(message),
      ongap: (reason) => window.gaps.push(reason),
      onstatechange: (state, detail) => {
        if (state === 'open') window.opens.push(Date.now());
        if (state === 'closed') window.closes.push([Date.now(), `${detail.code} ${detail.reason}`]);
      },
    });
  }, [`${origin}/broadcast`, transport, options]);
  return page;
}

function report(page) {
  return page.evaluate(() => ({
    log: window.log, gaps: window.gaps, opens: window.opens, closes: window.closes, silenceMs: window.client.silenceMs,
  }));
}

async function main() {
  const [origin, transports, waitMs, marker, options] = process.argv.slice(2);
  const logs = [];
  const browser = await launch();
  try {
    const names = transports.split(',');
    const pages = await Promise.all(names.map((t) => openPage(browser, logs, origin, t, JSON.parse(options || '{}'))));
    await Promise.all(pages.map((page) => page.waitForFunction(() => window.opens.length > 0, null,
      { timeout: OPEN_MS })));
    process.stdout.write(JSON.stringify({ ready: true }) + '\n');
    // A page that never delivers the marker is reported as it is: the test says which.
    await Promise.all(pages.map((page) => page.waitForFunction(
      (m) => window.log.includes(m), marker, { timeout: Number(waitMs), polling: 100 }).catch(() => null)));
    const found = await Promise.all(pages.map(report));
    const byTransport = {};
    names.forEach((name, i) => { byTransport[name] = found[i]; });
    return { pages: byTransport };
  } finally {
    await browser.close();
  }
}

run(main);
