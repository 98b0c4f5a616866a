// The dashboard in a real browser: Debian's Chromium driven by Playwright
// (playwright-core, no bundled browser), with axe-core checking every page.
//
// Started by bins/tradeterm/tests/external/dashboard.rs, which runs a single-node
// stack (one simulated terminal with prop-firm rules and a news guard, and a
// second license) and passes, in the environment:
//   TT_DASHBOARD_URL  the gateway (http://127.0.0.1:PORT)
//   TT_REST_URL       the REST API
//   TT_MASTER_KEY_A   the demo license's master key; TT_TERMINAL_A its simulated terminal
//   TT_MASTER_KEY_B   another license's master key;  TT_TERMINAL_B its terminal
//   TT_CHROMIUM       the browser (default /usr/bin/chromium)
//   TT_SCREENSHOTS    a folder: a PNG of each page is written there (`cargo xtask screenshots`)
// Control lines to the harness go to stderr: `TT_SIM <terminal key>` asks it
// to start a simulated terminal's agent with that key.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (run through bins/tradeterm/tests/external/dashboard.rs)`);
  return value;
};
const BASE = env("TT_DASHBOARD_URL");
const REST = env("TT_REST_URL");
const MASTER_A = env("TT_MASTER_KEY_A");
const MASTER_B = env("TT_MASTER_KEY_B");
const TERMINAL_A = env("TT_TERMINAL_A");
const TERMINAL_B = env("TT_TERMINAL_B");
const CHROMIUM = process.env.TT_CHROMIUM || "/usr/bin/chromium";
const SHOTS = process.env.TT_SCREENSHOTS || "";

let browser;
let contextA;
let page; // license A's tab, kept across the steps
const cspViolations = [];

function control(line) {
  process.stderr.write(`TT_SIM ${line}\n`);
}

async function shot(name) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

// axe-core over the whole page: WCAG 2.1 A and AA (labels, names, contrast,
// landmarks, …) and axe's best practices. Evaluated over the DevTools
// protocol, so the page keeps its Content-Security-Policy.
async function accessible(p, label) {
  await p.evaluate(AXE_SOURCE + "\n;0");
  const result = await p.evaluate(() =>
    window.axe.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
      resultTypes: ["violations"],
    }),
  );
  const problems = result.violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
  );
  assert.deepEqual(problems, [], `accessibility of ${label}`);
}

async function newContext() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-GB" });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE });
  return context;
}

function watch(p) {
  p.on("console", (message) => {
    if (/Content.Security.Policy/i.test(message.text())) cspViolations.push(message.text());
  });
}

async function signIn(p, masterKey) {
  await p.goto(`${BASE}/dashboard`);
  assert.match(p.url(), /\/dashboard\/sign-in$/);
  await p.fill("#master_key", masterKey);
  await p.click("button[type=submit]");
  await p.waitForURL(/\/dashboard\/terminals$/);
}

// The steps build on each other: after a failure the rest are skipped.
let failed = false;
function step(name, body) {
  test(name, { timeout: 60000 }, async (t) => {
    if (failed) {
      t.skip("an earlier step failed");
      return;
    }
    try {
      await body();
    } catch (e) {
      failed = true;
      if (SHOTS || process.env.CI) {
        await shot(`failed-${name.slice(0, 30).replace(/[^a-z0-9]+/gi, "-")}`).catch(() => {});
      }
      throw e;
    }
  });
}

before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  contextA = await newContext();
  page = await contextA.newPage();
  page.setDefaultTimeout(10000);
  watch(page);
});

after(async () => {
  await browser?.close();
});

step("sign in with the keyboard; a wrong key is refused and not echoed", async () => {
  await page.goto(`${BASE}/dashboard/terminals`);
  assert.match(page.url(), /\/dashboard\/sign-in$/, "not signed in: the sign-in page");
  await accessible(page, "sign-in");
  await shot("01-sign-in");

  await page.fill("#master_key", "tt_lic_wrong");
  await page.press("#master_key", "Enter");
  await page.waitForSelector("#sign-in-error");
  assert.equal(await page.locator("#master_key").inputValue(), "", "the key is not put back");
  assert.ok(!(await page.content()).includes("tt_lic_wrong"));

  // Keyboard only: Tab from the top of the page reaches the key field, Enter submits.
  await page.goto(`${BASE}/dashboard/sign-in`);
  let reached = false;
  for (let i = 0; i < 10 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() => document.activeElement?.id === "master_key");
  }
  assert.ok(reached, "the key field is reachable with Tab");
  await page.keyboard.type(MASTER_A);
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/dashboard\/terminals$/);
  assert.ok(!page.url().includes(MASTER_A) && !(await page.content()).includes(MASTER_A));
  const cookies = await contextA.cookies(`${BASE}/dashboard/terminals`);
  const session = cookies.find((c) => c.name === "tt_dash");
  assert.ok(session, "a session cookie");
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");
  assert.equal(await page.evaluate(() => document.cookie), "", "no cookie is readable by scripts");
});

step("the terminals page shows the simulated terminal live", async () => {
  const row = page.locator(`tr[data-terminal="${TERMINAL_A}"]`);
  await row.locator('[data-status="connected"]').waitFor();
  const text = await row.innerText();
  assert.match(text, /MT5/);
  assert.match(text, /demo/);
  assert.match(text, /Allow-trading input: off/);
  await accessible(page, "terminals");
  await shot("02-terminals");
});

let newTerminal;
let newKey;

step("create a terminal: its key once, copied; its agent connects and the list follows without a reload", async () => {
  await page.fill("#terminal-name", "Browser MT5");
  await page.click("text=Create terminal");
  await page.waitForSelector("#terminal-key");
  newKey = await page.locator("#terminal-key").inputValue();
  newTerminal = (await page.locator("#terminal-id").innerText()).trim();
  assert.match(newKey, /^tt_term_/);
  assert.match(await page.locator("#snippet-mt5").innerText(), new RegExp(`inp_TerminalKey  = ${newKey}`));
  await accessible(page, "terminal created");
  await shot("03-terminal-created");

  await page.click('button[data-copy="terminal-key"]');
  await page.waitForFunction(() => document.getElementById("announce").textContent.includes("Copied"));
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), newKey, "the copy button copies the key");

  await page.goto(`${BASE}/dashboard/terminals`);
  const row = page.locator(`tr[data-terminal="${newTerminal}"]`);
  await row.locator('[data-status="never"]').waitFor();
  await page.evaluate(() => { window.__sameDocument = true; });
  control(newKey); // the harness starts a simulated terminal with the shown key
  await row.locator('[data-status="connected"]').waitFor({ timeout: 20000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "refreshed without a reload");
  assert.match(await row.innerText(), /MT5/);
});

step("a terminal's page shows its prop-firm status, news guard and alerts, refreshed in place", async () => {
  await page.goto(`${BASE}/dashboard/terminals/${TERMINAL_A}`);
  const verdict = page.locator("#prop-firm-verdict");
  await verdict.waitFor();
  assert.match(await verdict.getAttribute("data-verdict"), /^(ok|warning|critical|breached)$/);
  assert.match(await page.locator("#max-safe-risk").innerText(), /%/);
  assert.match(await page.locator("#prop-firm").innerText(), /Daily loss/);
  assert.match(await page.locator("#news-guard").innerText(), /ACTIVE/);
  assert.ok(await page.locator("#alerts").isVisible());
  await accessible(page, "terminal");
  await shot("04-terminal");
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.waitForFunction(
    () => document.getElementById("terminal-insights").hasAttribute("data-updated"),
    null,
    { timeout: 20000 },
  );
  assert.equal(await page.evaluate(() => window.__sameDocument), true);
  assert.ok(await page.locator("#prop-firm-verdict").isVisible(), "the refreshed panel still shows the status");
});

step("rotating a key says what it disconnects, then shows the new key once", async () => {
  await page.goto(`${BASE}/dashboard/terminals/${newTerminal}`);
  await page.click("text=Rotate key…");
  await page.waitForSelector("#rotation-effects");
  assert.match(await page.locator("#rotation-effects").innerText(), /The agent connected now is disconnected at once/);
  await accessible(page, "rotate confirmation");
  await shot("05-rotate-confirm");
  await page.click("button:has-text('Rotate the key')");
  await page.waitForSelector("#rotation-outcome");
  assert.match(await page.locator("#rotation-outcome").innerText(), /The connected agent was disconnected/);
  const rotated = await page.locator("#terminal-key").inputValue();
  assert.ok(rotated.startsWith("tt_term_") && rotated !== newKey);
  await accessible(page, "key rotated");
  await shot("06-key-rotated");
  // The agent, given the new key, connects again.
  control(rotated);
  await page.goto(`${BASE}/dashboard/terminals/${newTerminal}`);
  await page.locator('#terminal-status [data-status="connected"]').waitFor({ timeout: 20000 });
});

async function restTerminals(key) {
  const response = await fetch(`${REST}/api/v1/terminals`, { headers: { Authorization: `Bearer ${key}` } });
  return response.status;
}

step("an API key: created with a label and shown once, works, revoked after a confirmation, refused at once", async () => {
  await page.goto(`${BASE}/dashboard/api-keys`);
  await accessible(page, "API keys");
  await shot("07-api-keys");
  await page.fill("#key-label", "browser test");
  await page.click("text=Create key");
  const secret = await page.locator("#api-key").inputValue();
  assert.match(secret, /^svc_api_/);
  await accessible(page, "API key created");
  await shot("08-api-key-created");
  assert.equal(await restTerminals(secret), 200, "the new key works on the REST API");

  await page.goto(`${BASE}/dashboard/api-keys`);
  assert.ok(!(await page.content()).includes(secret), "the list never shows the secret");
  await page.click('a[aria-label="Revoke the key browser test"]');
  await page.waitForSelector("text=Programs using it are refused at once");
  await accessible(page, "revoke confirmation");
  await shot("09-api-key-revoke");
  await page.click("button:has-text('Revoke the key')");
  await page.waitForSelector("#notice");
  assert.equal(await restTerminals(secret), 401, "the revoked key is refused at once");
});

step("the five-key limit is explained when reached", async () => {
  for (let i = 0; ; i++) {
    await page.goto(`${BASE}/dashboard/api-keys`);
    if (await page.locator("#key-limit").count()) break;
    assert.ok(i < 5, "the limit shows up after at most five keys");
    await page.fill("#key-label", `key ${i}`);
    await page.click("text=Create key");
    await page.waitForSelector("#api-key");
  }
  assert.match(await page.locator("#key-limit").innerText(), /5 active API keys, the most it may hold/);
  assert.equal(await page.locator("button:has-text('Create key')").isDisabled(), true);
  await accessible(page, "API keys at the limit");
  await shot("10-api-keys-limit");
});

step("another license's session reaches nothing of this one", async () => {
  const contextB = await newContext();
  const pageB = await contextB.newPage();
  watch(pageB);
  await signIn(pageB, MASTER_B);
  assert.ok(await pageB.locator(`tr[data-terminal="${TERMINAL_B}"]`).count());
  assert.equal(await pageB.locator(`tr[data-terminal="${TERMINAL_A}"]`).count(), 0);
  for (const path of [
    `/dashboard/terminals/${TERMINAL_A}`,
    `/dashboard/terminals/${TERMINAL_A}/rotate-key`,
    `/dashboard/fragments/terminals/${TERMINAL_A}/insights`,
  ]) {
    const response = await pageB.goto(`${BASE}${path}`);
    assert.equal(response.status(), 404, path);
  }
  // B's page posting to A's terminal with B's own valid CSRF token: not found, nothing rotated.
  await pageB.goto(`${BASE}/dashboard/terminals`);
  const status = await pageB.evaluate(async (terminal) => {
    const csrf = document.querySelector('meta[name="csrf-token"]').content;
    const response = await fetch(`/dashboard/terminals/${terminal}/rotate-key`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ csrf }),
    });
    return response.status;
  }, TERMINAL_A);
  assert.equal(status, 404);
  await page.goto(`${BASE}/dashboard/terminals`);
  await page.locator(`tr[data-terminal="${TERMINAL_A}"] [data-status="connected"]`).waitFor();
  await contextB.close();
});

step("the audit log filters in place, and the settings page turns trade confirmation off and on", async () => {
  await page.goto(`${BASE}/dashboard/audit`);
  assert.equal(await page.locator('nav a[aria-current="page"]').innerText(), "Audit log");
  await accessible(page, "audit log");
  await shot("12-audit-log");
  await page.selectOption("#f-surface", "mcp");
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Filter')")]);
  assert.match(page.url(), /\/dashboard\/audit\?.*surface=mcp/);
  assert.equal(await page.locator("#f-surface").inputValue(), "mcp", "the filter stays selected");
  assert.match(await page.locator("#export").getAttribute("href"), /^\/dashboard\/audit\.csv\?.*surface=mcp/);
  await accessible(page, "audit log, filtered");

  await page.goto(`${BASE}/dashboard/settings`);
  await accessible(page, "settings");
  await shot("13-settings");
  const box = page.locator("#mcp-trade-confirmation");
  assert.ok(await box.isChecked(), "on by default");
  await box.uncheck();
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Save')")]);
  await page.locator("#notice").waitFor();
  assert.ok(!(await page.locator("#mcp-trade-confirmation").isChecked()), "saved off");
  await page.locator("#confirmation-off").waitFor();
  await accessible(page, "settings saved");
  await page.locator("#mcp-trade-confirmation").check();
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Save')")]);
  assert.ok(await page.locator("#mcp-trade-confirmation").isChecked(), "saved on again");
});

step("a form without a valid CSRF token changes nothing", async () => {
  await page.goto(`${BASE}/dashboard/terminals`);
  const before = await page.locator("tr[data-terminal]").count();
  await page.evaluate(() => {
    document.querySelector('form[action="/dashboard/terminals"] input[name="csrf"]').value = "forged";
  });
  await page.fill("#terminal-name", "Forged");
  const [response] = await Promise.all([
    page.waitForNavigation(),
    page.click("text=Create terminal"),
  ]);
  assert.equal(response.status(), 403);
  assert.match(await page.locator("main").innerText(), /Nothing was changed/);
  await accessible(page, "not accepted");
  await shot("11-not-accepted");
  await page.goto(`${BASE}/dashboard/terminals`);
  assert.equal(await page.locator("tr[data-terminal]").count(), before);
  assert.equal(await page.locator("text=Forged").count(), 0);
});

step("sign out ends the session", async () => {
  await page.goto(`${BASE}/dashboard/terminals`);
  await page.click("button:has-text('Sign out')");
  await page.waitForURL(/\/dashboard\/sign-in$/);
  await page.goto(`${BASE}/dashboard/api-keys`);
  assert.match(page.url(), /\/dashboard\/sign-in$/);
  assert.deepEqual(cspViolations, [], "no Content-Security-Policy violation on any page");
});
