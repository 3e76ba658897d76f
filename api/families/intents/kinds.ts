/** The intent kinds (CONTRACT §13): browser elements (spec §2.2), each with a client token, and hosted-page links. */
export const ELEMENT_KINDS = ['checkout_plugin', 'checkout_page', 'payment_form', 'payment_method_form', 'processing_account_plugin', 'oauth_client_token'];
export const LINK_KINDS = ['checkout_link', 'payouts_enrollment_link', 'account_enrollment_link'] as const;

export type LinkKind = (typeof LINK_KINDS)[number];

export function isLinkKind(kind: string): kind is LinkKind {
  return (LINK_KINDS as readonly string[]).includes(kind);
}
