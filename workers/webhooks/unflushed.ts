/**
 * Commits of the delivery path that need not wait for the WAL to reach the disk: a FROM item that
 * turns `synchronous_commit` off for the statement's own transaction (as `SET LOCAL` would, in the
 * same round trip). Such a commit is visible to every other session at once; only a crash of the
 * database server itself can forget it, and then it forgets everything committed after it too
 * (the WAL is one sequence, flushed in order). So a write can skip the flush when forgetting it,
 * together with all that came later, leaves a state a crashed worker could also have left: taking
 * a job (graphile-worker's own pool commits so too), completing one whose answer is recorded, and
 * opening an attempt before its request goes out. An attempt whose opening a server crash forgot
 * is sent again as the same attempt (a duplicate the receiver dedups on the event id, never a lost
 * delivery); its answer's record, a durable commit, flushes every opening before it.
 */
export const UNFLUSHED = `(select set_config('synchronous_commit', 'off', true)) as unflushed`;
