/** Unit tier: the pure rules of money and payment numbers, no database. */
import t from 'tap';
import { parseMoney } from '../../api/schema/values.ts';
import { abaValid, cardBrand, expiryInPast, luhnValid, mask, normaliseExpiry } from '../../api/families/payment_methods/numbers.ts';

t.test('parseMoney keeps exact cents and rounds further decimals half-up on the text', async (t) => {
  const cases: Array<[unknown, number]> = [
    [10.5, 1050], ['10.50', 1050], [0.1 + 0.2, 30], ['0.015', 2], ['0.0149', 1], [1e12, 1e14], ['999.995', 100000], [123.456, 12346],
  ];
  for (const [input, minor] of cases) t.same(parseMoney(input), { ok: true, value: minor }, String(input));
});

t.test('parseMoney refuses what is not a positive amount', async (t) => {
  for (const input of [0, -1, '-1', 'abc', '', ' ', NaN, Infinity, '1e3', 1e21, '0.004', 1e12 + 0.01, null, {}, [], true]) {
    t.equal(parseMoney(input).ok, false, JSON.stringify(input) ?? String(input));
  }
});

t.test('Luhn accepts test cards and refuses a changed digit', async (t) => {
  t.ok(luhnValid('4242424242424242'));
  t.ok(luhnValid('4111111111111111'));
  t.notOk(luhnValid('4242424242424241'));
  t.notOk(luhnValid('42424242'), 'too short');
  t.notOk(luhnValid('4242-4242-4242-4242'), 'digits only');
});

t.test('card brands by prefix', async (t) => {
  t.same(['4242424242424242', '5555555555554444', '2223003122003222', '378282246310005', '6011111111111117', '3530111333300000'].map(cardBrand),
    ['visa', 'mastercard', 'mastercard', 'american_express', 'discover', 'other']);
});

t.test('expiry: MM/YY and MM/YYYY normalise; a card is good through its month', async (t) => {
  t.same(normaliseExpiry('1/2035'), { expiry: '01/35', year: 2035, month: 1 });
  t.same(normaliseExpiry('12 / 35'), { expiry: '12/35', year: 2035, month: 12 });
  t.equal(normaliseExpiry('13/35'), null);
  t.equal(normaliseExpiry('12-35'), null);
  const now = new Date('2026-11-23T12:00:00Z');
  t.notOk(expiryInPast(2026, 11, now), 'this month is still good');
  t.ok(expiryInPast(2026, 10, now));
  t.ok(expiryInPast(2025, 12, now));
});

t.test('ABA routing checksum', async (t) => {
  t.ok(abaValid('036001808'));
  t.ok(abaValid('011000015'));
  t.notOk(abaValid('036001809'));
  t.notOk(abaValid('03600180'), 'nine digits');
});

t.test('mask shows only the last four', async (t) => {
  t.equal(mask('4242424242424242'), 'xxxxxxxxxxxx4242');
  t.equal(mask('123'), '123');
});
