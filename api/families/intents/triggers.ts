/**
 * The status triggers of the link tables' objects: intents and payment activations that end
 * (finished or expired). The link machinery of this family (expiry, enrollment) fires both, so
 * both are named here; the payment activation family declares its own from here.
 */
import { trigger } from '../../db/events.ts';

export const INTENT_STATUS_TRIGGER = trigger('intent:status');
export const PAYMENT_ACTIVATION_STATUS_TRIGGER = trigger('payment_activation:status');

/** The object a link table holds, and the trigger its status changes fire. */
export const LINK_OBJECTS = {
  intents: { name: 'intent', trigger: INTENT_STATUS_TRIGGER },
  payment_activations: { name: 'payment_activation', trigger: PAYMENT_ACTIVATION_STATUS_TRIGGER },
} as const;
