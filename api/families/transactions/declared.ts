/**
 * The transaction family, as the funding steps reach it (./funding.ts): a refused deposit's rule
 * returns the transactions it funded to held through the family's update, but the family's
 * declaration imports those rules.
 */
import { lateFamily } from '../lateFamily.ts';

const transactions = lateFamily('transaction');

export const declareTransactionFamily = transactions.declare;
export const transactionFamily = transactions.get;
