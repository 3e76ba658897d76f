/**
 * Unit tier: a create's processor decisions. Inside a transaction a card's answer is provisional
 * until the processor has given it outside; the create runs again with the real answers, the n-th
 * question getting the n-th answer, and a question that changed between runs is asked anew.
 */
import t from 'tap';
import { ApiError } from '../../api/errors.ts';
import type { PaymentProcessor } from '../../api/processor.ts';
import { decidedOutside, DecisionsPending, ProcessorDecisions } from '../../api/processorDecisions.ts';

function countingProcessor(declined: Set<string> = new Set()): PaymentProcessor & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    authorizeCard: async (number) => {
      asked.push(number);
      return declined.has(number) ? { approved: false, statusCode: 'card_declined', message: 'Declined' } : { approved: true, statusCode: 'approved', message: 'Approved' };
    },
    voidAuthorization: async () => {},
  bankWillReject: () => false,
  };
}

t.test('in a transaction nothing is asked; the create runs again with the processor\'s answers, in order', async (t) => {
  const processor = countingProcessor(new Set(['2']));
  const decisions = new ProcessorDecisions(processor);
  const runs: string[][] = [];
  const answer = await decidedOutside(decisions, async () => {
    const seen = [await decisions.authorizeCard('1'), await decisions.authorizeCard('2')].map((a) => a.statusCode);
    runs.push(seen);
    decisions.settle();
    return seen;
  });
  t.same(runs, [['approved', 'approved'], ['approved', 'card_declined']], 'provisional first, then the real answers');
  t.same(answer, ['approved', 'card_declined']);
  t.same(processor.asked, ['1', '2'], 'each card asked once');
});

t.test('a question that changed between runs is asked anew, and the ones before it are kept', async (t) => {
  const processor = countingProcessor();
  const decisions = new ProcessorDecisions(processor);
  const cards = [['1', '2'], ['1', '3'], ['1', '3']];
  let run = 0;
  await decidedOutside(decisions, async () => {
    for (const card of cards[run]) await decisions.authorizeCard(card);
    run++;
    decisions.settle();
  });
  t.equal(run, 3);
  t.same(processor.asked, ['1', '2', '3']);
});

t.test('a create whose questions keep changing is answered 409 after three runs', async (t) => {
  const decisions = new ProcessorDecisions(countingProcessor());
  let run = 0;
  const refused = await decidedOutside(decisions, async () => {
    await decisions.authorizeCard(String(run++));
    decisions.settle();
  }).catch((error: ApiError) => error);
  t.equal((refused as ApiError).status, 409);
  t.equal(run, 3);
});

t.test('a refusal before any card question is answered at once; one after a provisional answer is decided and run again', async (t) => {
  const processor = countingProcessor();
  const early = new ProcessorDecisions(processor);
  const refusedEarly = await decidedOutside(early, async () => {
    throw new ApiError(400, 'InvalidAttributes', 'amount');
  }).catch((error: ApiError) => error);
  t.equal(refusedEarly.status, 400);
  t.same(processor.asked, [], 'the processor was not asked');
  const late = new ProcessorDecisions(processor);
  let runs = 0;
  const refusedLate = await decidedOutside(late, async () => {
    runs++;
    await late.authorizeCard('1');
    throw new ApiError(400, 'InvalidAttributes', 'allocations');
  }).catch((error: ApiError) => error);
  t.equal(refusedLate.status, 400);
  t.equal(runs, 2, 'run again on the real answer, which refused it too');
  t.same(processor.asked, ['1']);
});

t.test('planned on the pool (direct), questions go straight to the processor', async (t) => {
  const processor = countingProcessor(new Set(['9']));
  const decisions = new ProcessorDecisions(processor, { direct: true });
  t.equal((await decisions.authorizeCard('9')).statusCode, 'card_declined');
  t.doesNotThrow(() => decisions.settle());
  t.ok(new DecisionsPending() instanceof Error);
});

t.test('a plan that asked a question writes nothing until the processor has answered: the run that writes is the one on real answers', async (t) => {
  const processor = countingProcessor(new Set(['2']));
  const decisions = new ProcessorDecisions(processor);
  const written: string[][] = [];
  await decidedOutside(decisions, async () => {
    const seen = [await decisions.authorizeCard('1'), await decisions.authorizeCard('2')].map((a) => a.statusCode);
    decisions.beforeWrite();
    written.push(seen);
    decisions.settle();
  });
  t.same(written, [['approved', 'card_declined']], 'one write, on the answers the processor gave');
  t.same(processor.asked, ['1', '2']);
  const before = new ProcessorDecisions(processor);
  t.doesNotThrow(() => before.beforeWrite(), 'a write before any question is not held back');
});
