/** The trigger of payment activations that end: finished or expired. */
import { trigger } from '../../db/events.ts';

export const PAYMENT_ACTIVATION_STATUS_TRIGGER = trigger('payment_activation:status');
