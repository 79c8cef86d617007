// usage: TOKEN_SECRET=... node private_rooms.js ORIGIN TRANSPORTS ROOM MARKER
// For each of the comma-separated TRANSPORTS, two pages with the shipped client,
// broker-client.js, forced to that transport, each on its own origin, in the private room
// ROOM. Their getToken() asks this script (page.exposeFunction) for tokens it signs with
// jsonwebtoken, as a page's backend would, with TOKEN_SECRET, HS256, naming ROOM:
// - page "fresh": one client whose every token lasts FRESH_S seconds: it refreshes in-band;
// - page "ends": four clients that must each stop after one connection: "stale" (its token
//   lasts SHORT_S seconds, and once it opened getToken() gives the same one again), "expired"
//   (the same, then tokens past their exp), "forged" (a token signed with another secret), and
//   "tokenless" (no getToken at all).
// Each client logs its states ("connecting", "open", "closed CODE REASON", "stopped CODE
// REASON" for a close, "stopped: REASON" for the client's own) and how many tokens it asked
// for; the fresh one logs every message it delivers. Prints {"ready": true} once every fresh
// client has started and every forged one stopped, then, once every fresh client delivered
// MARKER and every client of "ends" stopped, {"pages": {transport: {client: {"states",
// "tokens", "log"}}}}. The test publishes between those lines.
'use strict';

const jwt = require('jsonwebtoken');
const { launch, clientPage, run } = require('./chromium');

const WAIT_MS = 60000;
const FRESH_S = 10;
const SHORT_S = 3;
const SECRET = process.env.TOKEN_SECRET;
const OTHER_SECRET = 'not the broker secret, though as long as one';
const ENDS = ['stale', 'expired', 'forged', 'tokenless'];

/** A token for room, signed as kind says: lasting FRESH_S or SHORT_S s, past its exp, or forged. */
function mint(room, kind) {
  const now = Math.floor(Date.now() / 1000);
  const lasting = { fresh: FRESH_S, short: SHORT_S, expired: -60, forged: 60 }[kind];
  const claims = { sub: `page-${kind}`, rooms: [room], exp: now + lasting };
  return jwt.sign(claims, kind === 'forged' ? OTHER_SECRET : SECRET, { algorithm: 'HS256' });
}

async function openPage(browser, logs, origin, transport, room, name) {
  const tab = await clientPage(browser, logs, origin, `${transport}-${name}`);
  await tab.exposeFunction('mintToken', (kind) => mint(room, kind));
  await tab.evaluate(([url, transport, room, names]) => {
    window.clients = {};
    window.found = {};
    // Each client's getToken(), before its client first opened and after (given the last token):
    // an attempt that failed before (a cold broker's page may) is as if it had not been.
    const tokens = {
      fresh: () => window.mintToken('fresh'),
      stale: (opened, last) => (opened ? last : window.mintToken('short')),
      expired: (opened) => window.mintToken(opened ? 'expired' : 'short'),
      forged: () => window.mintToken('forged'),
    };
    for (const name of names) {
      const found = { states: [], tokens: 0, log: [] };
      window.found[name] = found;
      let last = null;
      const getToken = tokens[name] && (async () => {
        last = await tokens[name](found.states.includes('open'), last);
        found.tokens += 1;
        return last;
      });
      window.clients[name] = new BrokerClient(url, {
        rooms: { [room]: (message) => found.log.push(message) },
        transports: [transport],
        getToken,
        onstatechange: (state, detail) => found.states.push(
          !detail || typeof detail !== 'object' ? state
            : detail.code ? `${state} ${detail.code} ${detail.reason}` : `${state}: ${detail.reason}`),
      });
    }
  }, [`${origin}/broadcast`, transport, room, name === 'fresh' ? ['fresh'] : ENDS]);
  return tab;
}

function report(tabs) {
  return Promise.all(tabs.map((tab) => tab.page.evaluate(() => window.found))).then((found) => {
    const pages = {};
    tabs.forEach((tab, i) => { pages[tab.transport] = Object.assign(pages[tab.transport] || {}, found[i]); });
    return pages;
  });
}

/** Wait until ready(window) holds on every tab of tabs. */
function every(tabs, ready, argument) {
  return Promise.all(tabs.map((tab) => tab.page.waitForFunction(ready, argument, { timeout: WAIT_MS, polling: 100 })));
}

async function main() {
  const [origin, transports, room, marker] = process.argv.slice(2);
  const logs = [];
  const browser = await launch();
  try {
    const tabs = [];
    for (const transport of transports.split(',')) {
      const group = ['fresh', 'ends'].map((name) => ({ transport, name }));
      // A transport's pages at a time, as rooms.js: a cold broker serves many pages' scripts slowly.
      await Promise.all(group.map(async (tab) => { tab.page = await openPage(browser, logs, origin, transport, room, tab.name); }));
      tabs.push(...group);
    }
    const fresh = tabs.filter((tab) => tab.name === 'fresh');
    const ends = tabs.filter((tab) => tab.name === 'ends');
    const stopped = (names) => names.every((name) => window.clients[name].state === 'stopped');
    try {
      await every(fresh, (room) => window.clients.fresh.rooms[room].epoch !== null, room);
      await every(ends, stopped, ['forged']);
    } catch (error) {
      throw new Error(`ready: ${error.message}\n${JSON.stringify(await report(tabs))}\n${logs.slice(-40).join('\n')}`);
    }
    process.stdout.write(JSON.stringify({ ready: true }) + '\n');
    try {
      await every(fresh, (marker) => window.found.fresh.log.includes(marker), marker);
      await every(ends, stopped, ENDS);
    } catch (error) {
      throw new Error(`${marker}: ${error.message}\n${JSON.stringify(await report(tabs))}\n${logs.slice(-40).join('\n')}`);
    }
    return { pages: await report(tabs) };
  } finally {
    await browser.close();
  }
}

run(main);
