/** Runs the operator CLI (`bin/settle.ts`) as an operator would, against a test's database. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../api/config.ts';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runSettle(databaseUrl: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(projectRoot, 'bin/settle.ts'), ...args], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
