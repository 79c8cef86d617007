// usage: node campaigns.js ORIGIN PUBLISH_TOKEN SCREENSHOT_PATH
// The demo page's two campaigns side by side, on a broker started with --announce-audience 1
// after a backend added 10 to the counter "raised" of room spring and 2.5 to that of room
// autumn: /?rooms=spring,autumn shows a card per room with its own total at once, and
// /?rooms=autumn, in another window, the autumn card alone. Each card shows its room's
// audience (spring 1, autumn 2); an add in spring moves spring's card only, and a message
// published in autumn reaches the autumn cards only.
'use strict';

const { launch, newPage, run } = require('./chromium');

async function publish(origin, token, query, body) {
  const response = await fetch(`${origin}/publish?${query}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}` },
    body,
  });
  if (response.status !== 200) throw new Error(`POST /publish?${query}: ${response.status} ${await response.text()}`);
}

function card(page, room, part) {
  return page.locator(`[data-room="${room}"] ${part}`);
}

async function main() {
  const [origin, token, screenshot] = process.argv.slice(2);
  const logs = [];
  const browser = await launch();
  try {
    const [both, autumn] = await Promise.all([newPage(browser, logs), newPage(browser, logs)]);
    await both.setViewportSize({ width: 1100, height: 640 });
    const seen = {};
    const step = async (name, action) => {
      try {
        seen[name] = await action();
      } catch (error) {
        await both.screenshot({ path: screenshot });
        throw new Error(`${name}: ${error.message}\n${logs.join('\n')}`);
      }
    };
    await step('open', async () => {
      await Promise.all([both.goto(`${origin}/?rooms=spring,autumn`), autumn.goto(`${origin}/?rooms=autumn`)]);
      await Promise.all([both, autumn].map((page) => page.locator('#state[data-state="open"]').waitFor()));
    });
    await step('cards', () => Promise.all([both, autumn].map(
      (page) => page.locator('.campaign-card').evaluateAll((cards) => cards.map((c) => c.dataset.room)))));
    await step('chat shown', () => both.locator('.chat-card').isVisible());
    await step('totals', () => Promise.all([
      card(both, 'spring', '.counter').filter({ hasText: /^10$/ }).textContent(),
      card(both, 'autumn', '.counter').filter({ hasText: /^2\.5$/ }).textContent(),
      card(autumn, 'autumn', '.counter').filter({ hasText: /^2\.5$/ }).textContent(),
    ]));
    await step('audiences', () => Promise.all([
      card(both, 'spring', '.audience').filter({ hasText: /^1 watching$/ }).textContent(),
      card(both, 'autumn', '.audience').filter({ hasText: /^2 watching$/ }).textContent(),
      card(autumn, 'autumn', '.audience').filter({ hasText: /^2 watching$/ }).textContent(),
    ]));
    await step('spring added to', async () => {
      await publish(origin, token, 'room=spring&key=raised&op=add', '5');
      await card(both, 'spring', '.counter').filter({ hasText: /^15$/ }).waitFor();
      return [await card(both, 'spring', '.counter').textContent(), await card(both, 'autumn', '.counter').textContent(),
              await card(autumn, 'autumn', '.counter').textContent()];
    });
    await step('autumn line', async () => {
      await publish(origin, token, 'room=autumn', 'thank you, autumn');
      await Promise.all([both, autumn].map((page) => card(page, 'autumn', '.log li')
        .filter({ hasText: /^thank you, autumn$/ }).waitFor()));
      return card(both, 'spring', '.log li').filter({ hasText: /thank you/ }).count();
    });
    await both.screenshot({ path: screenshot });
    seen.errors = logs.filter((line) => line.startsWith('pageerror') || line.startsWith('error'));
    return seen;
  } finally {
    await browser.close();
  }
}

run(main);
