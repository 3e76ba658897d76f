/** A real SMTP server on loopback for e-mail tests: records each message it takes. */
import { SMTPServer } from 'smtp-server';
import type { Test } from 'tap';

export interface Received {
  from: string;
  to: string[];
  raw: string;
}

/** An SMTP server that wants user/secret, refuses `busy@` once (451) and `nobody@` always (550). */
export async function startSmtp(t: Test): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  let busyRefused = false;
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === 'user' && auth.password === 'secret') callback(null, { user: 'user' });
      else callback(new Error('Invalid credentials'));
    },
    onRcptTo(address, _session, callback) {
      if (address.address.startsWith('nobody@')) return callback(Object.assign(new Error('No such user'), { responseCode: 550 }));
      if (address.address.startsWith('busy@') && !busyRefused) {
        busyRefused = true;
        return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.server.address() as { port: number };
  return { url: `smtp://user:secret@127.0.0.1:${port}`, received };
}
