/**
 * Repository tier: object ids sort by time (api/ids.ts, migration 20261129000100). The service and
 * the database mint ids of one format, a prefix, 7 characters of time and 17 random ones; ids
 * minted in a later millisecond sort after, whichever of the two minted them, so new rows land at
 * the right edge of the indexes keyed on them.
 */
import t from 'tap';
import { rows } from '../../api/db/connection.ts';
import { newId, sortableTime, TIME_DIGITS } from '../../api/ids.ts';
import { repositoryDatabase } from '../helpers/rollback.ts';

const db = await repositoryDatabase(t);
const FORMAT = /^evt_[0-9A-Za-z]{24}$/;
const tick = () => new Promise((resolve) => setTimeout(resolve, 2));
const databaseIds = async (n: number) => (await rows<{ id: string }>(db, `select new_object_id('evt') as id from generate_series(1, ?)`, [n])).map((row) => row.id);

t.test('the time digits sort as the times they write', async (t) => {
  const times = [Date.UTC(2020, 0, 1), Date.UTC(2020, 0, 1) + 61, Date.UTC(2020, 0, 1) + 62, Date.UTC(2026, 10, 26, 13, 0, 0, 5), Date.UTC(2100, 0, 1)];
  const written = times.map((time) => sortableTime(time));
  for (const text of written) t.equal(text.length, TIME_DIGITS);
  t.same([...written].sort(), written, 'in the order of the times, as text is compared');
  t.equal(new Set(written).size, written.length, 'a millisecond apart is another text');
});

t.test('ids minted later sort after, the service\'s and the database\'s alike', async (t) => {
  const minted: string[] = [];
  for (let i = 0; i < 6; i++) {
    minted.push(i % 2 ? (await databaseIds(1))[0]! : newId('evt'));
    await tick();
  }
  for (const id of minted) t.match(id, FORMAT);
  t.same([...minted].sort(), minted, JSON.stringify(minted));
});

t.test('the random characters differ between ids of the same millisecond', async (t) => {
  const fromDatabase = await databaseIds(2000);
  const fromService = Array.from({ length: 2000 }, () => newId('evt'));
  for (const ids of [fromDatabase, fromService]) {
    t.equal(new Set(ids).size, ids.length, 'all distinct');
    t.equal(ids.filter((id) => !FORMAT.test(id)).length, 0, 'every one of the format');
    const tails = new Set(ids.map((id) => id.slice(4 + TIME_DIGITS)));
    t.equal(tails.size, ids.length, 'distinct without their time');
    // Every base62 character turns up in the random part (2,000 × 17 draws of 62 leave none out by chance).
    t.equal(new Set([...ids.map((id) => id.slice(4 + TIME_DIGITS)).join('')]).size, 62);
  }
});
