/**
 * A processing account's processing settings (`/processing_settings`, one per account): v1
 * `processing_settings_id`, v2 `processing.settings_id`. On create, naming another account's
 * settings copies its funding settings and category (client libraries pass the id of an existing
 * profile's settings); afterwards the id is the account's own and cannot be set.
 */
import type { RuleContext, StoredObject } from '../../engine/family.ts';
import { invalidAttributes } from '../../errors.ts';
import { accountIdOfSettings, settingsIdOf } from '../processing_settings/ids.ts';
import { findProcessingAccount } from './repository.ts';

const reason = (ctx: RuleContext, text: string) => (ctx.version === 'v1' ? { processing_settings_id: text } : { processing: { settings_id: text } });

export async function applySettingsTemplate(ctx: RuleContext, next: StoredObject, previous: StoredObject | null): Promise<StoredObject> {
  const given = next.data.processing_settings_id;
  if (given === undefined) return next;
  const { processing_settings_id: _given, ...data } = next.data;
  if (previous) {
    if (given === settingsIdOf(previous.id)) return { ...next, data };
    throw invalidAttributes(reason(ctx, 'Set only when the account is created'));
  }
  const templateId = typeof given === 'string' ? accountIdOfSettings(given) : null;
  const template = templateId ? await findProcessingAccount(ctx.tx, ctx.tenant, templateId) : null;
  if (!template) throw invalidAttributes(reason(ctx, 'No processing settings with this id'));
  const source = (template.data.processing ?? {}) as Record<string, unknown>;
  const processing = { ...(data.processing as Record<string, unknown> | undefined) };
  if (source.funding) processing.funding = structuredClone(source.funding);
  if (source.default_category !== undefined && processing.default_category === undefined) processing.default_category = source.default_category;
  return { ...next, data: { ...data, processing } };
}

export function showSettingsIds(rows: StoredObject[]): void {
  for (const row of rows) if (row.type === 'processing') row.data = { ...row.data, processing_settings_id: settingsIdOf(row.id) };
}
