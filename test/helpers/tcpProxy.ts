/**
 * A loopback TCP proxy in front of a database server, so a test can take the server's machine
 * away from a running process: `cut()` closes every open connection mid-stream (the server process died and its kernel closed the sockets),
 * `close()` refuses new ones (nothing listens any more), `open()` listens again on the same port.
 * `refuse()` cuts and drops each new connection as it arrives, counted in `refused()` (a server
 * that is going away), until `accept()`. `silence()` keeps every connection open and new ones
 * accepted but forwards no byte either way, dropping them (the server's machine vanished without a
 * reset), until `speak()`: connections opened from then on are forwarded again.
 */
import net from 'node:net';
import type { Test } from 'tap';

export interface TcpProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's */
  urlThrough: (url: string) => string;
  cut: () => void;
  close: () => Promise<void>;
  open: () => Promise<void>;
  refuse: () => void;
  accept: () => void;
  silence: () => void;
  speak: () => void;
  /** connections dropped since the last refuse() */
  refused: () => number;
}

export async function startTcpProxy(t: Test, targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let refusing = false;
  let refused = 0;
  let silent = false;
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  };
  const server = net.createServer((client) => {
    if (refusing) {
      refused += 1;
      client.on('error', () => {});
      return void client.destroy();
    }
    track(client);
    if (silent) return;
    const upstream = net.connect(targetPort, targetHost);
    track(upstream);
    client.on('data', (bytes) => silent || upstream.write(bytes));
    upstream.on('data', (bytes) => silent || client.write(bytes));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  const close = () => new Promise<void>((resolve) => {
    cut();
    if (!server.listening) return resolve();
    server.close(() => resolve());
  });
  t.teardown(close);
  return {
    port,
    urlThrough: (url) => url.replace(/^(\w+:\/\/(?:[^@/]*@)?)[^/]+/, `$1127.0.0.1:${port}`),
    cut,
    close,
    open: () => listen(port),
    refuse: () => {
      refusing = true;
      refused = 0;
      cut();
    },
    accept: () => {
      refusing = false;
    },
    refused: () => refused,
    silence: () => {
      silent = true;
    },
    speak: () => {
      silent = false;
    },
  };
}
