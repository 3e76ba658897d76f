/** The trigger of intents that end (finished or expired), and of each link table's objects. */
import { trigger } from '../../db/events.ts';
import { PAYMENT_ACTIVATION_STATUS_TRIGGER } from '../payment_activations/triggers.ts';

export const INTENT_STATUS_TRIGGER = trigger('intent:status');

/** The object a link table holds, and the trigger its status changes fire. */
export const LINK_OBJECTS = {
  intents: { name: 'intent', trigger: INTENT_STATUS_TRIGGER },
  payment_activations: { name: 'payment_activation', trigger: PAYMENT_ACTIVATION_STATUS_TRIGGER },
} as const;
