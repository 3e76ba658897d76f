/**
 * Pieces of the OpenAPI description of actions beyond the generic operations (a webhook's resend
 * and test, a payment link's e-mail resend): error answers, request bodies and curl samples.
 */
import type { Version } from './engine/family.ts';

export type Schema = Record<string, unknown>;

export const errorAnswer = (description: string): Schema => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

export function formOrJsonBody(schema: Schema): Schema {
  return { required: true, content: { 'application/json': { schema }, 'application/x-www-form-urlencoded': { schema } } };
}

export function curlSample(version: Version, path: string, form: string): Schema[] {
  const header = version === 'v1' ? '' : ` -H "X-API-Version: ${version}"`;
  return [{ lang: 'Shell', label: 'curl', source: `curl -u $SETTLE_KEY:${header} "$SETTLE_URL${path}" ${form}` }];
}
