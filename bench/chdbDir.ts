/**
 * Where a benchmark's embedded chdb keeps its data: a fresh directory beside the data `npm start`
 * keeps (SETTLE_DATA_DIR, by default the project's `.data`), or under BENCH_CH_DIR.
 *
 * Not the system's temp directory, which `npm start` does not use. Where ext4 runs without a
 * journal (this machine's disk), creating a file scans its block group past every inode deleted in
 * the last minutes, and tests and benchmarks create and delete thousands of files in the temp
 * directory. Every chdb insert writes a part of ten files: into the mirror table, 25 rows an insert
 * cost 11.4–13.8 CPU ms in /tmp (6.7–9.1 of them in the kernel) against 3.8–4.2 ms in another
 * directory of the same disk, measured one after the other. The mirror's own merges delete parts
 * as fast as passes write them, so under a steady flow its directory gathers such inodes too.
 */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../api/config.ts';

export function chdbBenchDir(prefix = 'settle-bench-ch-'): string {
  const parent = process.env.BENCH_CH_DIR ?? path.resolve(process.env.SETTLE_DATA_DIR ?? path.join(projectRoot, '.data'));
  fs.mkdirSync(parent, { recursive: true });
  return fs.mkdtempSync(path.join(parent, prefix));
}
