// usage: node demo.js ORIGIN PUBLISH_TOKEN SCREENSHOT_PATH
// A newcomer's tour of the demo page on a broker started with --replay 1 after a backend
// added 40.5 and 0.50 to the counter "raised" (op=add) and published a chat line after it: the
// counter shows 41.00 at once; switch to xhr-streaming; chat; a backend adds 1 over HTTP and
// the counter moves to 42.00. Also reports the silence bound (silenceMs) of the page's client.
'use strict';

const { launch, newPage, run } = require('./chromium');

async function add(origin, token, amount) {
  const response = await fetch(`${origin}/publish?key=raised&op=add`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}` },
    body: amount,
  });
  if (response.status !== 200) throw new Error(`POST /publish: ${response.status} ${await response.text()}`);
}

async function main() {
  const [origin, token, screenshot] = process.argv.slice(2);
  const logs = [];
  const browser = await launch();
  try {
    const page = await newPage(browser, logs);
    await page.setViewportSize({ width: 1100, height: 640 });
    // Keep every BrokerClient the page makes, as window.clients, to read what it was given.
    await page.addInitScript(() => {
      let wrapped;
      Object.defineProperty(window, 'BrokerClient', {
        configurable: true,
        get: () => wrapped,
        set: (BrokerClient) => {
          wrapped = function (url, options) {
            const client = new BrokerClient(url, options);
            window.clients = (window.clients || []).concat([client]);
            return client;
          };
        },
      });
    });
    await page.goto(`${origin}/`);
    const seen = {};
    const step = async (name, action) => {
      try {
        seen[name] = await action();
      } catch (error) {
        await page.screenshot({ path: screenshot });
        throw new Error(`${name}: ${error.message}\n${logs.join('\n')}`);
      }
    };
    await step('open', () => page.locator('#state[data-state="open"]').waitFor());
    await step('replayed counter', () => page.locator('#counter', { hasText: /^41\.00$/ }).textContent());

    await step('forced transport', async () => {
      await page.selectOption('#transport-choice', 'xhr-streaming');
      await page.locator('#transport', { hasText: /^xhr-streaming$/ }).waitFor();
      await page.locator('#state[data-state="open"]').waitFor();
      return new URL(page.url()).searchParams.get('transport');
    });

    await step('chat', async () => {
      await page.fill('#chat-input', 'hello from the demo test');
      await page.click('#chat-send');
      return page.locator('#log li', { hasText: ': hello from the demo test' }).textContent();
    });

    await step('published counter', async () => {
      await add(origin, token, '1');
      return page.locator('#counter', { hasText: /^42\.00$/ }).textContent();
    });

    await step('audience', () => page.locator('#audience', { hasText: /^1 watching$/ }).textContent());
    await step('silence bound', () => page.evaluate(() => window.clients[window.clients.length - 1].silenceMs));

    await page.screenshot({ path: screenshot });
    seen.transport = await page.locator('#transport').textContent();
    seen.errors = logs.filter((line) => line.startsWith('pageerror') || line.startsWith('error'));
    return seen;
  } finally {
    await browser.close();
  }
}

run(main);
