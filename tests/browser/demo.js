// usage: node demo.js ORIGIN PUBLISH_TOKEN SCREENSHOT_PATH
// A newcomer's tour of the demo page on a broker started with --replay 1 after a backend
// published {"counter": 41}: the counter shows 41 at once; switch to xhr-streaming; chat;
// a backend publishes {"counter": 42} over HTTP and the counter moves.
'use strict';

const { launch, newPage, run } = require('./chromium');

async function publish(origin, token, message) {
  const response = await fetch(`${origin}/publish`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(message),
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
    await step('replayed counter', () => page.locator('#counter', { hasText: /^41$/ }).textContent());

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
      await publish(origin, token, { counter: 42 });
      return page.locator('#counter', { hasText: /^42$/ }).textContent();
    });

    await step('audience', () => page.locator('#audience', { hasText: /^1 watching$/ }).textContent());

    await page.screenshot({ path: screenshot });
    seen.transport = await page.locator('#transport').textContent();
    seen.errors = logs.filter((line) => line.startsWith('pageerror') || line.startsWith('error'));
    return seen;
  } finally {
    await browser.close();
  }
}

run(main);
