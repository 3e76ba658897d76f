/** Which held transactions a manual release pays out (api/families/funding/release.ts paidOut). */
import t from 'tap';
import { paidOut } from '../../api/families/funding/release.ts';

const payment = (id: string, amount: number, fee: number) => ({ id, type: 'payment', was: 'held' as const, amount, fee });
const refund = (id: string, amount: number) => ({ id, type: 'refund', was: 'held' as const, amount, fee: 0 });

t.test('a partial release pays the oldest first while what stays available no longer covers the rest', async (t) => {
  const held = [payment('a', 10000, 320), payment('b', 3000, 117)];
  t.same(paidOut(held, 7563).map((i) => i.id), ['a']);
  t.same(paidOut(held, 12563).map((i) => i.id), [], 'all still covered by what stays');
});

t.test('a release of everything available pays out every held transaction, negative ones too', async (t) => {
  const held = [payment('a', 10000, 320), { id: 'cb', type: 'chargeback', was: 'held' as const, amount: 5000, fee: 0 }, { id: 'rv', type: 'chargeback_reversal', was: 'held' as const, amount: 5000, fee: 0 }];
  t.same(paidOut(held, 0).map((i) => i.id), ['a', 'cb', 'rv']);
});

t.test('a refund among held items counts against what they need covered', async (t) => {
  const held = [payment('a', 10000, 320), refund('r', 5000), payment('b', 3000, 117)];
  t.same(paidOut(held, 2883).map((i) => i.id), ['a'], 'after a, the refund and b need only -21.17, covered by 28.83');
  t.same(paidOut(held, -100).map((i) => i.id), ['a', 'r', 'b'], 'nothing left: all paid out');
});
