/**
 * The billing schedule family, as the rules of its charges reach it. A charge keeps its schedule's
 * `recurring_amount` through the schedule's update, but the schedule's declaration imports the
 * charge rules (through its own rules' nested charges): the declaration hands itself here as it is
 * made, rather than the charge rules importing it back (a circle).
 */
import type { Family } from '../../engine/family.ts';

let schedules: Family | undefined;

export function declareScheduleFamily(family: Family): Family {
  schedules = family;
  return family;
}

export function scheduleFamily(): Family {
  if (!schedules) throw new Error('The billing schedule family is not declared yet');
  return schedules;
}
