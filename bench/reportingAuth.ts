/**
 * The REPORTING_SECRET of a bench's web and reporting children (they inherit the bench's
 * environment), and what the bench itself sends when it calls the reporting port.
 */
import { randomBytes } from 'node:crypto';

export const REPORTING_AUTH = { Authorization: `Bearer ${process.env.REPORTING_SECRET ??= randomBytes(32).toString('base64url')}` };
