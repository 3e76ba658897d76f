/** The trigger entities fire when their verification status changes. */
import { trigger } from '../../db/events.ts';

export const ENTITY_STATUS_TRIGGER = trigger('entity:status');
