/**
 * A batch of recorded answers meets a server at its connection limit (53300: the connection was
 * refused before any statement ran) and is asked again: left unrecorded, every delivery of the
 * batch would be attempted a second time.
 */
import t from 'tap';
import { refusedAgain } from '../../workers/webhooks/deliver.ts';

const refused = () => Object.assign(new Error('sorry, too many clients already'), { code: '53300' });

t.test('a statement refused a connection is asked again until it runs', async (t) => {
  let calls = 0;
  const result = await refusedAgain(async () => {
    calls += 1;
    if (calls < 3) throw refused();
    return 'recorded';
  });
  t.equal(result, 'recorded');
  t.equal(calls, 3, 'two refusals, then the statement ran');
});

t.test('any other failure is not asked again', async (t) => {
  let calls = 0;
  await t.rejects(refusedAgain(async () => {
    calls += 1;
    throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
  }), { code: '40P01' });
  t.equal(calls, 1);
});

t.test('a refusal that lasts is given up after a bound', async (t) => {
  let calls = 0;
  await t.rejects(refusedAgain(async () => {
    calls += 1;
    throw refused();
  }), { code: '53300' });
  t.ok(calls > 1 && calls <= 10, `asked ${calls} times`);
});
