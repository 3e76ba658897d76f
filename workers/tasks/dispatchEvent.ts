/**
 * `dispatch_event`: hands one outbox event on. For now it marks the event dispatched; webhook
 * matching and delivery build on this task.
 */
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/connection.ts';
import { markDispatched } from '../../api/db/events.ts';

export function dispatchEvent(db: Db): Task {
  return async (payload) => {
    const eventId = (payload as { event_id?: unknown }).event_id;
    if (typeof eventId !== 'string') throw new Error('dispatch_event needs an event_id');
    await markDispatched(db, eventId);
  };
}
