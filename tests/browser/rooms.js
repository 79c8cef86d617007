// usage: node rooms.js ORIGIN TRANSPORTS MARKER...
// For each of the comma-separated TRANSPORTS, three pages with the shipped client,
// broker-client.js, forced to that transport, each on its own origin: one in room "a", one
// in room "b", one in both over one session ("ab"); page a holds a second client, asking for
// a room of a bad name (window.refused). Room a's callbacks are its own, room b's an
// onmessage alone, its gaps told to the client's ongap with the room's name; the client's
// own onmessage must never be called. Each page logs, per room, every message it delivers
// and every gap it reports. Prints {"ready": true, "sends": {...}} once every room of every
// page has started and the refused client stopped (with what send() answered on the page in
// both), then, for each MARKER in turn, once every room of every page has delivered a
// message equal to it, one line {"marker", "pages": {transport: {page: {"log", "gaps",
// "opens", "strays", "states", "refused"}}}}, "refused" the second client's states. The test
// publishes and restarts the broker between those lines.
'use strict';

const { launch, clientPage, run } = require('./chromium');

const WAIT_MS = 60000;
const PAGES = { a: ['a'], b: ['b'], ab: ['a', 'b'] };

async function openPage(browser, logs, origin, transport, page) {
  const tab = await clientPage(browser, logs, origin, `${transport}-${page}`);
  await tab.evaluate(([url, transport, names]) => {
    window.log = {};
    window.gaps = {};
    window.strays = [];
    window.opens = 0;
    window.states = [];
    const callbacks = {
      a: { onmessage: (message) => window.log.a.push(message), ongap: (reason) => window.gaps.a.push(reason) },
      b: (message) => window.log.b.push(message),
    };
    const rooms = {};
    for (const name of names) {
      window.log[name] = [];
      window.gaps[name] = [];
      rooms[name] = callbacks[name] || {};
    }
    const said = (states) => (state, detail) => states.push(detail && detail.code ? `${state} ${detail.code} ${detail.reason}` : state);
    window.client = new BrokerClient(url, {
      rooms,
      transports: [transport],
      silenceMs: 3000,
      onmessage: (message, offset, room) => window.strays.push([room, message]),
      ongap: (reason, room) => window.gaps[room].push(reason),
      onstatechange: (state, detail) => {
        if (state === 'open') window.opens += 1;
        said(window.states)(state, detail);
      },
    });
    window.refusedStates = [];
    if (names.length === 1 && names[0] === 'a') {
      window.refused = new BrokerClient(url, {
        rooms: { 'not a room': {} }, transports: [transport], silenceMs: 3000, onstatechange: said(window.refusedStates),
      });
    }
  }, [`${origin}/broadcast`, transport, PAGES[page]]);
  return tab;
}

function report(tab) {
  return tab.evaluate(() => ({
    log: window.log, gaps: window.gaps, strays: window.strays, opens: window.opens,
    states: window.states, refused: window.refusedStates,
    at: Object.keys(window.client.rooms).map((name) => [name, window.client.rooms[name].epoch,
                                                        window.client.rooms[name].offset]),
  }));
}

/** Wait until every room of every page has started (marker null), or has delivered marker. */
function everyRoom(tabs, marker) {
  return Promise.all(tabs.map((tab) => tab.page.waitForFunction(
    (marker) => Object.keys(window.client.rooms).every((room) => (
      marker === null ? window.client.rooms[room].epoch !== null : window.log[room].includes(marker))),
    marker, { timeout: WAIT_MS, polling: 100 })));
}

async function byTransport(tabs) {
  const found = await Promise.all(tabs.map((tab) => report(tab.page)));
  const pages = {};
  tabs.forEach((tab, i) => {
    pages[tab.transport] = pages[tab.transport] || {};
    pages[tab.transport][tab.name] = found[i];
  });
  return pages;
}

async function main() {
  const [origin, transports, ...markers] = process.argv.slice(2);
  const logs = [];
  const browser = await launch();
  try {
    const tabs = [];
    for (const transport of transports.split(',')) {
      for (const name of Object.keys(PAGES)) tabs.push({ transport, name });
    }
    // A transport's pages at a time: 24 pages loading their scripts at once from a broker just
    // started (PyPy's, cold) may outlast a page's deadline on a busy machine.
    for (const transport of transports.split(',')) {
      const group = tabs.filter((tab) => tab.transport === transport);
      await Promise.all(group.map(async (tab) => { tab.page = await openPage(browser, logs, origin, transport, tab.name); }));
    }
    try {
      await everyRoom(tabs, null);
      await Promise.all(tabs.filter((tab) => tab.name === 'a').map((tab) => tab.page.waitForFunction(
        () => window.refused.state === 'stopped', null, { timeout: WAIT_MS, polling: 100 })));
    } catch (error) {
      throw new Error(`ready: ${error.message}\n${JSON.stringify(await byTransport(tabs))}\n${logs.slice(-40).join('\n')}`);
    }
    const sends = {};
    for (const tab of tabs.filter((t) => t.name === 'ab')) {
      sends[tab.transport] = await tab.page.evaluate(() => window.client.send('from both'));
    }
    process.stdout.write(JSON.stringify({ ready: true, sends }) + '\n');
    for (const marker of markers) {
      try {
        await everyRoom(tabs, marker);
      } catch (error) {
        throw new Error(`${marker}: ${error.message}\n${JSON.stringify(await byTransport(tabs))}\n${logs.slice(-40).join('\n')}`);
      }
      process.stdout.write(JSON.stringify({ marker, pages: await byTransport(tabs) }) + '\n');
    }
    return { done: true };
  } finally {
    await browser.close();
  }
}

run(main);
