/** Structured JSON logs (pino) to stdout, or to `destination`; one logger per process, children per request. */
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export function createLogger(level: string, name: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = { level, name, base: { pid: process.pid }, redact: ['req.headers.authorization', '*.secret', '*.password'] };
  return destination ? pino(options, destination) : pino(options);
}
