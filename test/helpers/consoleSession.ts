/** A person at the console: typing into a field and signing in with a key. */
import type { Locator, Page } from 'playwright-core';

/** Types into a field as a person does: click it, select what is there, then press each key. */
export async function typeInto(field: Locator, text: string): Promise<void> {
  await field.click();
  await field.press('ControlOrMeta+A');
  await field.pressSequentially(text);
}

/** Opens the console at `baseUrl`, types the key and signs in; resolves once the views are shown. */
export async function signInToConsole(page: Page, baseUrl: string, key: string): Promise<void> {
  await page.goto(`${baseUrl}/console`);
  await typeInto(page.getByLabel('Secret key'), key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Views' }).waitFor();
}
