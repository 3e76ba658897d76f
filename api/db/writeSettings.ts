/** The configuration's write settings, applied to the process's writers once at start-up. */
import type { Config } from '../config.ts';
import { auditRows } from './auditStatement.ts';
import { groupCommit } from './groupWriter.ts';

export function applyWriteSettings(config: Pick<Config, 'groupCommit' | 'auditBy'>): void {
  groupCommit.enabled = config.groupCommit;
  auditRows.inStatement = config.auditBy === 'statement';
}
