/**
 * A server that ends a connection in the same packet that made it ready (PostgreSQL shutting down
 * as a connection is made sends its FATAL right behind the ready-for-query) must not crash the
 * process: the pool's connection fails its query with the server's error, and the process lives on.
 * The server here is a loopback socket speaking just enough of the protocol to do that.
 */
import t from 'tap';
import net from 'node:net';
import { primaryPool } from '../api/db/primary.ts';

function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

const authenticationOk = message('R', Buffer.from([0, 0, 0, 0]));
const readyForQuery = message('Z', Buffer.from('I', 'latin1'));
const fatal = message('E', Buffer.concat([
  Buffer.from('SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0', 'latin1'),
  Buffer.from([0]),
]));

const server = net.createServer((socket) => {
  // The startup message (length-prefixed) is read, then ready and FATAL go out in one write.
  socket.once('data', () => {
    socket.write(Buffer.concat([authenticationOk, readyForQuery, fatal]));
    socket.end();
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => server.close());
const { port } = server.address() as net.AddressInfo;

t.test('a FATAL right behind ready-for-query fails the query, not the process', async (t) => {
  const uncaught: Error[] = [];
  const record = (error: Error) => uncaught.push(error);
  process.on('uncaughtException', record);
  t.teardown(() => process.off('uncaughtException', record));
  const pool = primaryPool(`postgres://settle@127.0.0.1:${port}/settle`, { max: 1 });
  pool.on('error', () => {});
  t.teardown(() => pool.end());
  const failed = await pool.query('select 1').then(() => null, (error: Error) => error);
  t.ok(failed, 'the query failed');
  // Let any event emitted after the connection was handed over reach the process.
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.same(uncaught.map((error) => error.message), [], 'no uncaught error');
});
