/** The trigger payment links fire when their status changes. */
import { trigger } from '../../db/events.ts';

export const PAYMENT_LINK_STATUS_TRIGGER = trigger('payment_link:status');
