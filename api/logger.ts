/** Structured JSON logs (pino) to stdout; one logger per process, children per request. */
import pino, { type Logger } from 'pino';

export function createLogger(level: string, name: string): Logger {
  return pino({ level, name, base: { pid: process.pid }, redact: ['req.headers.authorization', '*.secret', '*.password'] });
}
