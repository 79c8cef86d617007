// usage: node transport.js ORIGIN TRANSPORT
// Two browsers use the broker at ORIGIN over TRANSPORT only: one on the demo page the
// broker serves, one on a page of another origin (an app embedding sockjs-client, so
// CORS and the iframe transports' cross-origin messaging are exercised). Each sends a
// line and both must receive both lines. Prints {"transport", "used": [demo, app], "ms"}.
'use strict';

const { launch, newPage, run } = require('./chromium');

const APP_PAGE = 'http://app.localhost/';

/** Open APP_PAGE, a page of its own origin that loads sockjs-client from the broker. */
async function openAppPage(browser, logs, origin) {
  const page = await newPage(browser, logs);
  // The app's origin is not on loopback; Chromium lets it reach the loopback broker only
  // with the local-network-access permission a user would grant.
  await page.context().grantPermissions(['local-network-access']);
  await page.route(APP_PAGE, (route) => route.fulfill({
    contentType: 'text/html',
    body: `<!DOCTYPE html><title>app</title><script src="${origin}/vendor/sockjs-client/sockjs.min.js"></script>`,
  }));
  await page.goto(APP_PAGE);
  return page;
}

function connectFromApp(page, url, transport) {
  return page.evaluate(([url, transport]) => new Promise((resolve, reject) => {
    // A generous connect timeout: on a busy machine a polling transport's first
    // round trip may outlast sockjs-client's default, which gives up on it.
    const sock = new SockJS(url, null, { transports: [transport], timeout: 10000 });
    window.sock = sock;
    window.received = [];
    sock.onopen = () => resolve(sock.transport);
    sock.onmessage = (event) => window.received.push(event.data);
    sock.onclose = (event) => reject(new Error(`closed ${event.code} ${event.reason}`));
  }), [url, transport]);
}

async function main() {
  const [origin, transport] = process.argv.slice(2);
  const started = Date.now();
  const logs = [];
  const browser = await launch();
  const step = async (what, action) => {
    try {
      return await action();
    } catch (error) {
      throw new Error(`${transport}: ${what}: ${error.message}\n${logs.join('\n')}`);
    }
  };
  try {
    const [demo, app] = await Promise.all([newPage(browser, logs), openAppPage(browser, logs, origin)]);
    const used = await step('connect', async () => {
      await demo.goto(`${origin}/?transport=${encodeURIComponent(transport)}`);
      const [appTransport] = await Promise.all([
        connectFromApp(app, `${origin}/broadcast`, transport),
        demo.locator('#state[data-state="open"]').waitFor(),
      ]);
      return [await demo.locator('#transport').textContent(), appTransport];
    });
    const tag = Math.random().toString(36).slice(2);
    const fromDemo = `demo says ${tag}`;
    const fromApp = `app says ${tag}`;
    await step('send', async () => {
      await demo.fill('#chat-input', fromDemo);
      await demo.click('#chat-send');
      await app.evaluate((line) => window.sock.send(line), fromApp);
    });
    await step('receive', () => Promise.all([
      demo.locator('#log li', { hasText: fromDemo }).waitFor(),
      demo.locator('#log li', { hasText: fromApp }).waitFor(),
      app.waitForFunction((lines) => lines.every((line) => window.received.some((m) => m.endsWith(line))),
                          [fromDemo, fromApp]),
    ]));
    return { transport, used, ms: Date.now() - started };
  } finally {
    await browser.close();
  }
}

run(main);
