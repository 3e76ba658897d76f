/**
 * A payment method's owning account as SQL over `payment_methods`, spelt as the list API's query
 * compiler spells `customer_id` (`data #>> '{account_id}'`): the one expression the table's index
 * by tenant and account (`payment_methods_search_account`) holds, so the writers' own questions
 * about an account's methods (its default paying or funding method, its defaults changing) and
 * the console's search read the same index. Another spelling of the same value would not match it.
 */
export const METHOD_ACCOUNT_SQL = `data #>> '{account_id}'`;
