/**
 * Processing settings and profiles are one per processing account (CONTRACT §18), so their ids
 * are the account's with another prefix: `acct_X` ⇔ `ps_X` ⇔ `prof_X`. The views in
 * migrations/20261123000032_processing_settings.ts derive them the same way.
 */
const ACCOUNT = 'acct_';

export const SETTINGS_PREFIX = 'ps_';
export const PROFILE_PREFIX = 'prof_';

export function settingsIdOf(accountId: string): string {
  return SETTINGS_PREFIX + accountId.slice(ACCOUNT.length);
}

export function profileIdOf(accountId: string): string {
  return PROFILE_PREFIX + accountId.slice(ACCOUNT.length);
}

/** The processing account behind a settings id, or null when the id is not one. */
export function accountIdOfSettings(settingsId: string): string | null {
  return settingsId.startsWith(SETTINGS_PREFIX) && settingsId.length > SETTINGS_PREFIX.length ? ACCOUNT + settingsId.slice(SETTINGS_PREFIX.length) : null;
}
