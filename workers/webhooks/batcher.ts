/**
 * Group commit for the delivery path: concurrent callers each add one item and wait for its
 * result; the items gathered while earlier statements are in flight go to the database together
 * in one statement. Nothing waits on a timer: an item added to an idle batcher leaves on the next
 * turn of the event loop (with whatever else arrived in that turn), so batches grow with the load
 * and a lone delivery pays no delay.
 */

export interface BatcherOptions {
  /** items per statement at most */
  maxItems: number;
  /** statements in flight at once; the next batch gathers meanwhile */
  maxInFlight: number;
}

interface Waiting<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

export class Batcher<I, O> {
  private readonly run: (items: I[]) => Promise<O[]>;
  private readonly options: BatcherOptions;
  private waiting: Array<Waiting<I, O>> = [];
  private inFlight = 0;
  private scheduled = false;

  /** `run` answers one result per item, in the items' order; when it throws, every item of the batch fails with it. */
  constructor(run: (items: I[]) => Promise<O[]>, options: BatcherOptions) {
    this.run = run;
    this.options = options;
  }

  add(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.waiting.length === 0 || this.inFlight >= this.options.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.waiting.length === 0 || this.inFlight >= this.options.maxInFlight) return;
    const batch = this.waiting.splice(0, this.options.maxItems);
    this.inFlight += 1;
    this.run(batch.map((w) => w.item)).then(
      (results) => batch.forEach((w, i) => w.resolve(results[i]!)),
      (error) => batch.forEach((w) => w.reject(error)),
    ).finally(() => {
      this.inFlight -= 1;
      this.schedule();
    });
    this.schedule();
  }
}
