/** The trigger processing accounts fire: every change of their processing status, creation included. */
import { trigger } from '../../db/events.ts';

export const PROCESSING_STATUS_TRIGGER = trigger('processing_status');
