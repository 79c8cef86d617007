// usage: node resume.js ORIGIN TRANSPORTS MARKER...
// One page per transport (comma-separated TRANSPORTS), each on its own origin with the
// shipped client, broker-client.js, forced to that transport, logging every message it
// delivers and every gap it reports. Prints {"ready": true} once every page is open, then,
// for each MARKER in turn, once every page has delivered a message equal to it, one line
// {"marker", "pages": {transport: {"log", "gaps", "opens"}}}. The test drives the faults
// and the publishing between those lines.
'use strict';

const { launch, clientPage, run } = require('./chromium');

const WAIT_MS = 90000;

async function openPage(browser, logs, origin, transport) {
  const page = await clientPage(browser, logs, origin, transport);
  await page.evaluate(([url, transport]) => {
    window.log = [];
    window.gaps = [];
    window.opens = 0;
    window.closes = [];
    window.client = new BrokerClient(url, {
      transports: [transport],
      silenceMs: 3000,
      onmessage: (message) => window.log.push(message),
      ongap: (reason) => window.gaps.push(reason),
      onstatechange: (state, detail) => {
        if (state === 'open') window.opens += 1;
        if (state === 'closed') window.closes.push(`${detail.code} ${detail.reason}`);
      },
    });
  }, [`${origin}/broadcast`, transport]);
  return page;
}

function report(page) {
  return page.evaluate(() => ({
    log: window.log, gaps: window.gaps, opens: window.opens, closes: window.closes,
    at: [window.client.epoch, window.client.offset, window.client._only._joined],
  }));
}

async function main() {
  const [origin, transports, ...markers] = process.argv.slice(2);
  const logs = [];
  const browser = await launch();
  try {
    const names = transports.split(',');
    const pages = await Promise.all(names.map((t) => openPage(browser, logs, origin, t)));
    await Promise.all(pages.map((page) => page.waitForFunction(() => window.opens > 0, null, { timeout: WAIT_MS })));
    process.stdout.write(JSON.stringify({ ready: true }) + '\n');
    for (const marker of markers) {
      try {
        await Promise.all(pages.map((page) => page.waitForFunction(
          (m) => window.log.includes(m), marker, { timeout: WAIT_MS, polling: 100 })));
      } catch (error) {
        const found = (await Promise.all(pages.map(report))).map((page, i) => ({
          transport: names[i], delivered: page.log.length, last: page.log.slice(-3), gaps: page.gaps, opens: page.opens,
          closes: page.closes.filter((c) => !c.startsWith('3012')), at: page.at,
        }));
        throw new Error(`${marker}: ${error.message}\n${JSON.stringify(found)}\n${logs.slice(-40).join('\n')}`);
      }
      const found = await Promise.all(pages.map(report));
      const byTransport = {};
      names.forEach((name, i) => { byTransport[name] = found[i]; });
      process.stdout.write(JSON.stringify({ marker, pages: byTransport }) + '\n');
    }
    return { done: true };
  } finally {
    await browser.close();
  }
}

run(main);
