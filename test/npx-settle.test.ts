/**
 * `npx settle …` as the README runs it, with the machine's own npm and Node, which may be older
 * than the Node the project brings (its `node` devDependency). The first `npx settle` in a project
 * installs the project into npm's npx cache, and that install checks the project's `engines`
 * against the Node running npm.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { projectRoot } from '../api/config.ts';

const projectBin = path.join(projectRoot, 'node_modules');
// test/run.ts puts node_modules/.bin first, which would run npm itself on the project's Node.
const machinePath = (process.env.PATH ?? '').split(path.delimiter).filter((dir) => !dir.startsWith(projectBin)).join(path.delimiter);

function npx(args: string[], cache: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('npx', args, {
      cwd: projectRoot,
      env: { ...process.env, PATH: machinePath, npm_config_cache: cache, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', (error) => resolve({ code: null, stdout, stderr: stderr + error.message }));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test("a first npx settle with the machine's npm prints the usage and no engine warning, and runs on the project's Node", async (t) => {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'settle-npm-cache-'));
  t.teardown(() => fs.rmSync(cache, { recursive: true, force: true }));
  const help = await npx(['settle', '--help'], cache);
  t.equal(help.code, 0, 'exits 0', { stderr: help.stderr });
  t.match(help.stdout, /^usage: settle <command>/, 'prints the usage');
  t.notMatch(help.stderr, /EBADENGINE|Unsupported engine/, 'no engine warning');
  const node = await npx(['-c', 'node -p process.versions.node'], cache);
  const projectNode = JSON.parse(fs.readFileSync(path.join(projectBin, 'node', 'package.json'), 'utf8')).version;
  t.equal(node.stdout.trim(), projectNode, `the node that npx settle's #!/usr/bin/env node finds is the project's (${projectNode})`);
});
