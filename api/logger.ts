/**
 * Structured JSON logs (pino) to stdout, or to `destination`; one logger per process, children per
 * request. Every line passes one door: a key or client token in a message or a field (a hosted
 * page's path carries its token) is written as its shown prefix, never whole.
 */
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { maskCredentials } from './credentials.ts';

/** Most lines hold none: the cheap test first, a copy only when a field needs masking. */
const MAY_HOLD_CREDENTIAL = /_key_/;

function maskFields(object: Record<string, unknown>): Record<string, unknown> {
  let masked: Record<string, unknown> | null = null;
  for (const name in object) {
    const value = object[name];
    if (typeof value === 'string' && MAY_HOLD_CREDENTIAL.test(value)) (masked ??= { ...object })[name] = maskCredentials(value);
    else if (value instanceof Error && MAY_HOLD_CREDENTIAL.test(`${value.message}\n${value.stack}`)) {
      (masked ??= { ...object })[name] = { type: value.name, message: maskCredentials(value.message), stack: maskCredentials(value.stack ?? '') };
    }
  }
  return masked ?? object;
}

export function createLogger(level: string, name: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    name,
    base: { pid: process.pid },
    redact: ['req.headers.authorization', '*.secret', '*.password'],
    formatters: { log: maskFields },
    hooks: {
      logMethod(args, write) {
        write.apply(this, args.map((arg) => (typeof arg === 'string' && MAY_HOLD_CREDENTIAL.test(arg) ? maskCredentials(arg) : arg)) as Parameters<typeof write>);
      },
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
