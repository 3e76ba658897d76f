/**
 * Reads tap's TAP output as it passes through and keeps each failed test's path (the subtests
 * around it) and its diagnostic block, so `npm test` can repeat the failures after the summary:
 * a CI log that keeps only its tail still names what failed.
 */
export interface Failure {
  path: string[];
  diagnostic: string[];
}

const subtest = /^(\s*)# Subtest: (.*)$/;
const result = /^(\s*)not ok \d+ - (.*?)(?: # .*)?$/;
const maxDiagnosticLines = 40;

export class FailureCollector {
  readonly failures: Failure[] = [];
  #names: string[] = [];
  #open: { indent: number; failure: Failure } | null = null;
  #pending = '';

  write(chunk: string): void {
    const lines = (this.#pending + chunk).split('\n');
    this.#pending = lines.pop() ?? '';
    for (const line of lines) this.#line(line);
  }

  #line(line: string): void {
    if (this.#open) {
      const indent = line.length - line.trimStart().length;
      if (indent > this.#open.indent && line.trim() !== '') {
        if (this.#open.failure.diagnostic.length < maxDiagnosticLines) this.#open.failure.diagnostic.push(line);
        return;
      }
      this.#open = null;
    }
    const named = subtest.exec(line);
    if (named) {
      const depth = named[1].length / 4;
      this.#names = [...this.#names.slice(0, depth), named[2]];
      return;
    }
    const failed = result.exec(line);
    if (!failed) return;
    const depth = failed[1].length / 4;
    const failure = { path: [...this.#names.slice(0, depth), failed[2]], diagnostic: [] };
    // A parent fails because a child did: keep only the innermost failure under a path.
    const last = this.failures.at(-1);
    if (last && failure.path.length < last.path.length && failure.path.every((name, i) => last.path[i] === name)) return;
    this.failures.push(failure);
    this.#open = { indent: failed[1].length, failure };
  }

  report(): string {
    if (this.failures.length === 0) return '';
    const out = [`# ${this.failures.length} failed:`];
    for (const failure of this.failures) {
      out.push(`not ok - ${failure.path.join(' > ')}`, ...failure.diagnostic);
    }
    return out.join('\n') + '\n';
  }
}
