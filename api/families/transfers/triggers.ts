/** The trigger of a split payment's transfers. */
import { trigger } from '../../db/events.ts';

export const TRANSFER_TRIGGER = trigger('transfer');
