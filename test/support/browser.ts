import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, chromium, Page } from 'playwright-core';
import { ROOT } from './processes';

/** Debian's package (`apt-get install chromium`); no browser is ever downloaded. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless Chromium with nothing of its own going to the network (updates, sync, QUIC). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * axe-core run inside the page: the serious and critical violations, each as
 * "rule: help (targets)", so a failing expectation says what to fix.
 */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  const loaded = await page.evaluate<boolean>("'axe' in window");
  // Evaluated, not added as a <script>: the app's Content-Security-Policy (script-src 'self') stays on.
  if (!loaded) await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  // Page code as text: the specs compile without the DOM's types.
  const violations = await page.evaluate<unknown[]>(
    "axe.run({ resultTypes: ['violations'] }).then((r) => r.violations)",
  );
  return (violations as AxeViolation[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
    );
}

/**
 * A screenshot under var/screenshots/ (every run) and, with UPDATE_SCREENSHOTS=1, under
 * docs/screenshots/ (the committed ones the README shows).
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dirs = [join(ROOT, 'var', 'screenshots')];
  if (process.env.UPDATE_SCREENSHOTS === '1') dirs.push(join(ROOT, 'docs', 'screenshots'));
  for (const dir of dirs) {
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: join(dir, `${name}.png`) });
  }
}
