/**
 * How a secret key or client token is named where it must not be shown (listings, `keys revoke`,
 * the audit history, the request log, process logs): its shown prefix, the secret without its last
 * 24 characters.
 */

/** A secret key or client token anywhere in a text: `test_secret_key_…`, `secret_key_…`, `test_client_key_…`, `client_key_…`. */
const CREDENTIAL = /(?:test_)?(?:secret|client)_key_[0-9A-Za-z]+/g;
const HIDDEN_CHARACTERS = 24;

export function shownPrefix(secret: string): string {
  return secret.slice(0, secret.length - HIDDEN_CHARACTERS);
}

/** `text` with each key or client token in it cut to its shown prefix and an ellipsis (`/checkout/test_client_key_AbCdEfGh…`). */
export function maskCredentials(text: string): string {
  return text.replace(CREDENTIAL, (secret) => `${shownPrefix(secret)}…`);
}
