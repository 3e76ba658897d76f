/**
 * A port picked for a listener of our own lies below the kernel's range of ephemeral ports, so an
 * outgoing connection opened between the pick and the listen (a pool's, a receiver's) cannot take
 * it as its local port; and it can be listened on.
 */
import fs from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { freePort } from '../../api/db/embedded.ts';

/** The first ephemeral port where the kernel says (Linux), else the lowest common one (macOS and the BSDs start at 49152). */
function ephemeralStart(): number {
  try {
    return Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 49_152;
  }
}

t.test('picked ports are below the ephemeral range and free to listen on', async (t) => {
  const start = ephemeralStart();
  const picked = new Set<number>();
  for (let i = 0; i < 20; i++) {
    const port = await freePort();
    t.ok(port >= 1024 && port < start, `${port} is below ${start}`);
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
    picked.add(port);
  }
  t.ok(picked.size > 1, 'not one fixed port');
});
