/**
 * The payment method family, as its own rules reach it: a method that becomes an account's
 * default takes it from the others through the family's update, and the declaration imports
 * those rules.
 */
import { lateFamily } from '../lateFamily.ts';

const paymentMethods = lateFamily('payment method');

export const declarePaymentMethodFamily = paymentMethods.declare;
export const paymentMethodFamily = paymentMethods.get;
