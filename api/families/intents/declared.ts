/**
 * The intent family, as a client token's spend reaches it (./tokenSpend.ts): the spend finishes
 * the token's intent through the family's update, but the family's rules issue client tokens and
 * so reach, through the families a token pays with, the spend itself.
 */
import { lateFamily } from '../lateFamily.ts';

const intents = lateFamily('intent');

export const declareIntentFamily = intents.declare;
export const intentFamily = intents.get;
