/**
 * The processor's answers for one create, asked outside any database transaction: a networked
 * processor is never waited on while the create holds locks or an open transaction.
 *
 * A create's rules ask for a card's answer while they plan its rows. Planned on the pool (the
 * one-statement payment), the question goes straight to the processor. Inside a transaction, an
 * answer not yet known is noted and a provisional approval stands in for it, and the plan goes on
 * reading (a list's later items may ask more). Every write of the create comes after its
 * questions (the door's write step, `beforeWrite`): the first write that finds a question
 * unanswered refuses, so the transaction rolls back having only read; the create service then asks
 * the processor every noted question at once, outside the transaction, and runs the create again,
 * which plans on the real answers and writes once (`decidedOutside`). The rules ask in the same
 * order the second time, so the n-th question gets the n-th answer; a question that differs (the
 * payer's default method changed in between) is asked anew.
 */
import { ApiError, conflict } from './errors.ts';
import type { CardAuthorization, PaymentProcessor } from './processor.ts';

interface Answered {
  number: string;
  answer: CardAuthorization;
}

/** Thrown by `beforeWrite` (and `settle`) inside a create's transaction, so that it rolls back undecided, before writing. */
export class DecisionsPending extends Error {
  constructor() {
    super('The processor has not yet decided every card of this create');
  }
}

/** How often a create runs again because its questions changed between runs, before answering 409. */
const MAX_ROUNDS = 3;

/** Stands in for an answer until the processor gives it; the transaction never commits with it. */
const PROVISIONAL: CardAuthorization = { approved: true, statusCode: 'approved', message: 'Approved' };

export class ProcessorDecisions {
  readonly #processor: PaymentProcessor;
  readonly #direct: boolean;
  #answers: Answered[] = [];
  #pending = new Map<number, string>();
  #asked = 0;

  /** `direct`: the caller is outside any transaction (a plan on the pool), so questions go straight out. */
  constructor(processor: PaymentProcessor, options: { direct?: boolean } = {}) {
    this.#processor = processor;
    this.#direct = options.direct ?? false;
  }

  /** The processor's answer for the next card this create charges. */
  async authorizeCard(number: string): Promise<CardAuthorization> {
    const at = this.#asked++;
    const known = this.#answers[at];
    if (known?.number === number) return known.answer;
    if (known) this.#answers.length = at;
    if (this.#direct) {
      const answer = await this.#processor.authorizeCard(number);
      this.#answers[at] = { number, answer };
      return answer;
    }
    this.#pending.set(at, number);
    return PROVISIONAL;
  }

  /**
   * Called before each write of a create in a transaction: nothing is written on a provisional
   * answer, so a plan that asked a question the processor has not answered stops at its first write.
   */
  beforeWrite(): void {
    if (this.#pending.size) throw new DecisionsPending();
  }

  /** Called last inside the create's transaction: it may commit only on real answers. */
  settle(): void {
    this.beforeWrite();
  }

  beginAttempt(): void {
    this.#asked = 0;
    this.#pending.clear();
  }

  get hasPending(): boolean {
    return this.#pending.size > 0;
  }

  /**
   * Voids, through the processor, every approval this create was given: called when the write
   * that would have stored them failed, outside any transaction. Each is voided once; a void the
   * processor refuses leaves the others to be voided and the write's failure to be reported.
   */
  async voidApproved(): Promise<void> {
    const approved = this.#answers.filter((answered) => answered?.answer.approved);
    this.#answers = [];
    await Promise.allSettled(approved.map((answered) => this.#processor.voidAuthorization(answered.number, answered.answer)));
  }

  /** Asks the processor every noted question, in order; the caller holds no transaction. */
  async decidePending(): Promise<void> {
    for (const [at, number] of [...this.#pending].sort((a, b) => a[0] - b[0])) {
      this.#answers[at] = { number, answer: await this.#processor.authorizeCard(number) };
    }
    this.#pending.clear();
  }
}

/**
 * Runs `write`, which stores what the processor approved and rejects only when nothing of it was
 * stored (one statement, or a transaction up to its commit); when it fails, every approval is
 * voided through the processor and the failure stands.
 */
export async function voidingOnFailure<T>(decisions: ProcessorDecisions, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    await decisions.voidApproved();
    throw error;
  }
}

/**
 * Runs `attempt` (which opens, plans, writes and commits a create's transaction, calling
 * `beforeWrite` before each write and `settle` before the commit, and rejects only when it did not
 * commit) until it commits on real answers: after a rollback for undecided cards (a plan that
 * wrote nothing), the processor is asked outside any transaction and the attempt runs again. A refusal (an ApiError) reached on a provisional answer is decided and run again
 * too, since the real answer (a decline) may change it; one reached before any card question is
 * answered at once. When it fails for good, the approvals it was given are voided.
 */
export async function decidedOutside<T>(decisions: ProcessorDecisions, attempt: () => Promise<T>): Promise<T> {
  return voidingOnFailure(decisions, async () => {
    for (let round = 1; ; round++) {
      decisions.beginAttempt();
      try {
        return await attempt();
      } catch (error) {
        if (!decisions.hasPending || !(error instanceof DecisionsPending || error instanceof ApiError)) throw error;
        if (round >= MAX_ROUNDS) throw conflict('The payment method changed while the processor was deciding the payment; send the request again');
      }
      await decisions.decidePending();
    }
  });
}
