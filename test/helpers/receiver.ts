/** A real HTTP receiver on loopback that records what reaches it and answers as told. */
import http from 'node:http';
import type { Test } from 'tap';
import { eventually } from './wait.ts';

export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** decides each answer; default 200 */
  respond: (request: Received, index: number) => { status: number; body?: string; headers?: Record<string, string> };
  waitFor: (count: number, ms?: number) => Promise<Received[]>;
}

export async function startReceiver(t: Test): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    received: [],
    respond: () => ({ status: 200 }),
    waitFor: async (count, ms = 10_000) => {
      await eventually(() => receiver.received.length, (n) => n >= count, ms, 20);
      return receiver.received;
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      const index = receiver.received.push(request) - 1;
      const answer = receiver.respond(request, index);
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  receiver.url = `http://127.0.0.1:${address.port}`;
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return receiver;
}
