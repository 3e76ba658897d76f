/**
 * The hosted page of a link: `<SETTLE_PUBLIC_URL>/pay/<id>` (CONTRACT §16). The base comes from
 * the web process's configuration, read once on first use.
 */
import { loadConfig } from '../../config.ts';

let base: string | undefined;

export function paymentLinkUrl(id: string): string {
  base ??= loadConfig().publicUrl;
  return `${base}/pay/${id}`;
}
