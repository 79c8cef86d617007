// usage: node hostile.js ORIGIN TRANSPORT
// Chat messages written to escape their frame (close the script element, open a comment,
// split a JavaScript line with U+2028, break out of the string) travel over TRANSPORT to a
// page of the broker's own origin (where an escaped script could reach the top page) and
// to a page of another origin. Each page must receive every message exactly as sent, and
// no script in any frame of either page may have run one. Prints {"transport", "received",
// "ran"}.
'use strict';

const { launch, newPage, run } = require('./chromium');

const APP_PAGE = 'http://app.localhost/';
const RUN = 'window.pwned=1;try{top.pwned=1}catch(e){}';
const PAYLOADS = [
  `</script><script>${RUN}</script>`,
  `</SCRIPT ><img src=x onerror="${RUN}">`,
  `<!--<script>${RUN}//`,
  `\u2028${RUN}\u2029`,
  `"]);${RUN}//`,
  `\\");${RUN}//`,
  `&lt;/script&gt;&#x3c;/script>`,
];

async function pageAt(browser, logs, url, body) {
  const page = await newPage(browser, logs);
  if (body) {
    await page.context().grantPermissions(['local-network-access']);
    await page.route(url, (route) => route.fulfill({ contentType: 'text/html', body }));
  }
  await page.goto(url);
  return page;
}

function connect(page, url, transport) {
  return page.evaluate(([url, transport]) => new Promise((resolve, reject) => {
    // A generous connect timeout: on a busy machine a polling transport's first
    // round trip may outlast sockjs-client's default, which gives up on it.
    const sock = new SockJS(url, null, { transports: [transport], timeout: 10000 });
    window.hostile = { sock, received: [] };
    sock.onopen = () => resolve(sock.transport);
    sock.onmessage = (event) => window.hostile.received.push(event.data);
    sock.onclose = (event) => reject(new Error(`closed ${event.code} ${event.reason}`));
  }), [url, transport]);
}

async function scriptsThatRan(page) {
  let ran = 0;
  for (const frame of page.frames()) {
    ran += await frame.evaluate(() => (window.pwned ? 1 : 0)).catch(() => 0);
  }
  return ran;
}

async function main() {
  const [origin, transport] = process.argv.slice(2);
  const logs = [];
  const browser = await launch();
  try {
    const own = await pageAt(browser, logs, `${origin}/`);
    const app = await pageAt(browser, logs, APP_PAGE,
      `<!DOCTYPE html><title>app</title><script src="${origin}/vendor/sockjs-client/sockjs.min.js"></script>`);
    const pages = [own, app];
    try {
      await Promise.all(pages.map((page) => connect(page, `${origin}/broadcast`, transport)));
      await own.evaluate((payloads) => payloads.forEach((p) => window.hostile.sock.send(p)), PAYLOADS);
      await Promise.all(pages.map((page) => page.waitForFunction(
        (count) => window.hostile.received.length >= count, PAYLOADS.length)));
    } catch (error) {
      throw new Error(`${transport}: ${error.message}\n${logs.join('\n')}`);
    }
    const received = await Promise.all(pages.map((page) => page.evaluate(() => window.hostile.received)));
    const ran = (await Promise.all(pages.map(scriptsThatRan))).reduce((a, b) => a + b, 0);
    return { transport, sent: PAYLOADS, received, ran };
  } finally {
    await browser.close();
  }
}

run(main);
