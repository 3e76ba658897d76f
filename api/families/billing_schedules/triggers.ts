/** The trigger the billing run's automatic payments fire (besides the payment's own). */
import { trigger } from '../../db/events.ts';

export const AUTOMATIC_PAYMENT_TRIGGER = trigger('automatic_payment');
