/** The date range of a schedule or charge. */
import type { Json } from '../../engine/view.ts';
import { invalidAttributes } from '../../errors.ts';
import { toCalendarDate } from '../invoices/kinds.ts';

/** `start_date` and `end_date` as calendar dates, the end not before the start. */
export function normaliseDateRange(data: Json, required: boolean, prefix: (name: string) => string = (n) => n): void {
  for (const name of ['start_date', 'end_date']) {
    if (data[name] === undefined || data[name] === null) {
      if (name === 'start_date' && required) throw invalidAttributes({ [prefix(name)]: 'Required' });
      continue;
    }
    const date = toCalendarDate(data[name]);
    if (!date) throw invalidAttributes({ [prefix(name)]: 'Must be a date (YYYY-MM-DD)' });
    data[name] = date;
  }
  if (typeof data.start_date === 'string' && typeof data.end_date === 'string' && data.end_date < data.start_date) {
    throw invalidAttributes({ [prefix('end_date')]: 'Must not be before start_date' });
  }
}
