/**
 * Unit tier: how the browser's card and bank inputs read what people write (api/browser/public/
 * inputs.js, loaded as the pages load it, into a context of its own). The browser tests type the
 * same variants key by key; these cover the rest of the table at once.
 */
import { readFileSync } from 'node:fs';
import vm from 'node:vm';
import t from 'tap';

interface Kind {
  format: (value: string, deleting?: boolean, typedSlashEnd?: boolean) => string;
  clean: (value: string) => string;
  check: (value: string, now?: Date) => string | null;
}

const context: { SettleInputs?: { KINDS: Record<string, Kind>; joinExpiry: (m: string, y: string) => string } } = {};
vm.runInNewContext(readFileSync(new URL('../../api/browser/public/inputs.js', import.meta.url), 'utf8'), context);
const { KINDS, joinExpiry } = context.SettleInputs!;
const NOW = new Date('2026-11-25T12:00:00Z');

t.test('an expiry written any way people write it is read as the month and year they meant', async (t) => {
  const cases: Array<[string, string]> = [
    ['1235', '12/35'], ['12/35', '12/35'], ['12 / 35', '12/35'], ['12/2035', '12/35'], ['1/35', '01/35'], ['01/35', '01/35'],
    ['0135', '01/35'], ['122035', '12/35'], [' 12/35 ', '12/35'], ['12-35', '12/35'],
  ];
  for (const [written, meant] of cases) {
    t.equal(KINDS.expiry.check(written, NOW), null, `"${written}" is a good expiry`);
    t.equal(KINDS.expiry.clean(written), meant, `"${written}" is sent as ${meant}`);
  }
  for (const bad of ['13/35', '00/35', '12/3', '12//', 'ab/cd', '12']) t.equal(KINDS.expiry.check(bad, NOW), 'Enter the expiration date as MM/YY', bad);
  t.equal(KINDS.expiry.check('10/26', NOW), 'This card has expired');
  t.equal(KINDS.expiry.check('11/26', NOW), null, 'good through the last day of its month');
});

t.test('the expiry field shows MM/ as the month is typed, and never a doubled "/"', async (t) => {
  const typed: Array<[string, string]> = [
    ['1', '1'], ['12', '12/'], ['12//', '12/'], ['12/ ', '12/'], ['12/3', '12/3'], ['3', '03/'], ['13', '01/3'], ['12/20355', '12/2035'],
  ];
  for (const [raw, shown] of typed) t.equal(KINDS.expiry.format(raw, false, /\/\s*$/.test(raw)), shown, `after "${raw}"`);
  t.equal(KINDS.expiry.format('1/', false, true), '01/', 'a "/" typed after one digit pads the month');
  t.equal(KINDS.expiry.format('12', true, false), '12', 'deleting the "/" does not put it back');
  t.equal(KINDS.expiry.format('1/35', true, false), '1/35', 'nor pads a month being corrected');
});

t.test('card numbers: any spaces or dashes, grouped as the card prints them, checked by Luhn', async (t) => {
  for (const written of ['4242424242424242', '4242 4242 4242 4242', '4242-4242-4242-4242', '4242 - 4242 - 4242 - 4242']) {
    t.equal(KINDS.card_number.format(written), '4242 4242 4242 4242', written);
    t.equal(KINDS.card_number.clean(written), '4242424242424242');
    t.equal(KINDS.card_number.check(written), null);
  }
  t.equal(KINDS.card_number.format('378282246310005'), '3782 822463 10005', 'American Express is grouped 4-6-5');
  t.equal(KINDS.card_number.format('42424242424242424242424'), '4242 4242 4242 4242 424', 'at most 19 digits');
  t.equal(KINDS.card_number.check('4242 4242 4242 4241'), 'This card number is not valid: check each digit');
  t.equal(KINDS.card_number.check('4242'), 'This card number is too short');
  t.equal(KINDS.card_number.check('4111 1111 1111 9903'), null, 'the sandbox decline numbers go through to be declined');
});

t.test('security codes, bank numbers and split expiries', async (t) => {
  t.equal(KINDS.card_code.check('123'), null);
  t.equal(KINDS.card_code.check('12'), 'The security code is 3 or 4 digits');
  t.equal(KINDS.routing_number.format('021 000 021'), '021000021');
  t.equal(KINDS.routing_number.check('021 000 021'), null);
  t.equal(KINDS.routing_number.check('021000022'), 'This routing number is not valid: check each digit');
  t.equal(KINDS.account_number.clean('9876 5432-1'), '987654321');
  t.equal(joinExpiry('3', '2036'), '03/36');
  t.equal(joinExpiry('12', '35'), '12/35');
  t.equal(KINDS.expiry_month.check('13'), 'Enter the month as 1 to 12');
});
