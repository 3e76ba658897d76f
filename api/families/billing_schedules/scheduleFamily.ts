/**
 * The billing schedule family, as the rules of its charges reach it. A charge keeps its schedule's
 * `recurring_amount` through the schedule's update, but the schedule's declaration imports the
 * charge rules (through its own rules' nested charges).
 */
import { lateFamily } from '../lateFamily.ts';

const schedules = lateFamily('billing schedule');

export const declareScheduleFamily = schedules.declare;
export const scheduleFamily = schedules.get;
