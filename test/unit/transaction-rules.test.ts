/** Unit tier: the transaction state machine and the sandbox processor's decisions. */
import t from 'tap';
import { canTransition, STATUSES } from '../../api/families/transactions/lifecycle.ts';
import { bankWillReject, cardOutcome, sandboxProcessor } from '../../api/families/transactions/sandbox.ts';

t.test('allowed status changes, and nothing leaves a final state', async (t) => {
  const allowed = STATUSES.flatMap((from) => STATUSES.filter((to) => canTransition(from, to)).map((to) => `${from}>${to}`));
  t.same(allowed.sort(), [
    'authorized>processed', 'authorized>voided',
    'processed>rejected', 'processed>voided',
    'processing>processed', 'processing>rejected', 'processing>voided',
  ]);
  t.notOk(canTransition('unknown', 'processed'));
});

t.test('the sandbox declines 4111 1111 1111 99NN with the code NN names, approves other cards', async (t) => {
  t.same(cardOutcome('4111111111119900'), { approved: false, statusCode: 'card_expired', message: 'Declined: card expired' });
  t.equal(cardOutcome('4111111111119903').statusCode, 'general_decline');
  t.equal(cardOutcome('4111111111119909').statusCode, 'too_many_attempts');
  t.equal(cardOutcome('4111111111119910').approved, true, 'no code 10: approved');
  t.equal(cardOutcome('4242424242424242').approved, true);
});

t.test('bank accounts starting 000 are rejected after processing', async (t) => {
  t.ok(bankWillReject('000123456'));
  t.notOk(bankWillReject('123000456'));
});

t.test('the sandbox processor approves 4000 0000 0000 0259 and 2685 with the dispute each will raise', async (t) => {
  t.same(await sandboxProcessor.authorizeCard('4000000000000259'), { approved: true, statusCode: 'approved', message: 'Approved', dispute: 'chargeback' });
  t.equal((await sandboxProcessor.authorizeCard('4000000000002685')).dispute, 'chargeback_reversal');
  t.same(await sandboxProcessor.authorizeCard('4242424242424242'), { approved: true, statusCode: 'approved', message: 'Approved' }, 'no dispute');
});
