/**
 * Unit tier: the logger's one door. A key or client token in a message, a field or an error logged
 * with a line is written as its shown prefix; a line without one is written as it was.
 */
import t from 'tap';
import { createLogger } from '../../api/logger.ts';

function linesOf(write: (log: ReturnType<typeof createLogger>) => void): Array<Record<string, any>> {
  const lines: Array<Record<string, any>> = [];
  write(createLogger('trace', 'unit', { write: (line: string) => void lines.push(JSON.parse(line)) }));
  return lines;
}

const token = `test_client_key_${'AbCdEfGh'}${'Z'.repeat(24)}`;
const key = `secret_key_${'Qw3rTy12'}${'Y'.repeat(24)}`;

t.test('keys and tokens are written as their shown prefix, in fields, messages and errors', async (t) => {
  const [field, message, error, child] = linesOf((log) => {
    log.info({ path: `/checkout/${token}`, status: 200 }, 'request');
    log.warn(`refused ${key} at the door`);
    log.error({ err: new Error(`lookup of ${token} failed`) }, 'failed');
    log.child({ req: 'req_1' }).info({ path: `/elements/checkout/${token}` }, 'request');
  });
  t.equal(field.path, '/checkout/test_client_key_AbCdEfGh…');
  t.equal(field.status, 200, 'other fields as they were');
  t.equal(message.msg, 'refused secret_key_Qw3rTy12… at the door');
  t.equal(error.err.message, 'lookup of test_client_key_AbCdEfGh… failed');
  t.equal(child.path, '/elements/checkout/test_client_key_AbCdEfGh…');
  t.notOk(JSON.stringify([field, message, error, child]).includes('Z'.repeat(24)) || JSON.stringify([field, message, error, child]).includes('Y'.repeat(24)), 'no hidden part anywhere');
});

t.test('a line without a credential is written unchanged', async (t) => {
  const [line] = linesOf((log) => log.info({ path: '/customers/acct_1', note: 'a_key_word' }, 'request'));
  t.match(line, { path: '/customers/acct_1', note: 'a_key_word', msg: 'request' });
});
