// Debian's chromium, headless, driven by playwright-core, with a fresh profile for every launch.
'use strict';

const { chromium } = require('playwright-core');

const EXECUTABLE = '/usr/bin/chromium';
const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
const DEADLINE_MS = 15000;
// A test certificate's key, base64 SHA-256 of its SubjectPublicKeyInfo: trusted, and no other.
const TRUSTED_KEY = process.env.TRUSTED_SPKI_SHA256;

/** Launch chromium; playwright gives every launch its own temporary --user-data-dir. */
function launch() {
  const args = TRUSTED_KEY ? [...FLAGS, `--ignore-certificate-errors-spki-list=${TRUSTED_KEY}`] : FLAGS;
  return chromium.launch({ executablePath: EXECUTABLE, headless: true, args, timeout: DEADLINE_MS });
}

/** A page that fails the run on any uncaught error and keeps its console for the report. */
async function newPage(browser, console_) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(DEADLINE_MS);
  page.on('console', (message) => console_.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => console_.push(`pageerror: ${error.message}`));
  return page;
}

/**
 * A page of an origin of its own, http://NAME.localhost/, with the broker's sockjs-client and
 * broker-client.js loaded from ``origin``, as an application's page would load them.
 */
async function clientPage(browser, console_, origin, name) {
  const page = await newPage(browser, console_);
  const app = `http://${name}.localhost/`;
  await page.context().grantPermissions(['local-network-access']);
  await page.route(app, (route) => route.fulfill({
    contentType: 'text/html',
    body: `<!DOCTYPE html><title>${name}</title>
<script src="${origin}/vendor/sockjs-client/sockjs.min.js"></script>
<script src="${origin}/static/broker-client.js"></script>`,
  }));
  await page.goto(app);
  return page;
}

/** Run main(); print its result as one JSON line, or the error and exit 1. */
function run(main) {
  main().then(
    (result) => { process.stdout.write(JSON.stringify(result) + '\n'); },
    (error) => { process.stderr.write((error && error.stack) || String(error)); process.exitCode = 1; },
  );
}

module.exports = { launch, newPage, clientPage, run, DEADLINE_MS };
