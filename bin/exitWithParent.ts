/**
 * Preloaded (`node --import`) into every process the supervisor starts: a child whose `settle up`
 * is gone however it ended — SIGKILL, a crash — drains and exits as if it had been stopped,
 * instead of running on in its own process group holding the port and the database.
 *
 * The supervisor holds the other end of the child's IPC channel, and the kernel closes it with
 * the supervisor: the child sees 'disconnect' at once and sends itself SIGTERM, the signal its
 * own shutdown (api/process.ts) drains on. Nobody is left to SIGKILL a drain that hangs, so past
 * what the supervisor would have allowed (SETTLE_SHUTDOWN_TIMEOUT and KILL_GRACE_MS) the child
 * exits by itself. Its output meets EPIPE from then on, which console and pino's destination
 * ignore: the drain goes on.
 */
import { loadConfig } from '../api/config.ts';
import { KILL_GRACE_MS } from './supervisor.ts';

if (process.channel) {
  process.once('disconnect', () => {
    const deadline = loadConfig().shutdownTimeoutMs + KILL_GRACE_MS;
    setTimeout(() => process.exit(1), deadline).unref();
    process.kill(process.pid, 'SIGTERM');
  });
  // Watching the channel must not keep a process alive that would otherwise end.
  process.channel.unref();
}
