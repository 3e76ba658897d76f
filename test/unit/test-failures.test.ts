/**
 * Unit tier: `npm test` repeats each failed test's path and diagnostic after the summary
 * (test/failures.ts), read from TAP output split across arbitrary chunks.
 */
import t from 'tap';
import { FailureCollector } from '../failures.ts';

const output = [
  '# Subtest: test/a.test.ts',
  '    # Subtest: creates a customer',
  '        ok 1 - answered',
  '        not ok 2 - should be equal',
  '          ---',
  '          found: 500',
  '          wanted: 200',
  '          ...',
  '        ',
  '        not ok 3 - the row is stored',
  '        1..3',
  '    not ok 1 - creates a customer # time=12ms',
  '    # Subtest: lists',
  '        ok 1 - listed',
  '        1..1',
  '    ok 2 - lists',
  '    1..2',
  'not ok 1 - test/a.test.ts # time=40ms',
  '# Subtest: test/b.test.ts',
  '    ok 1 - fine',
  '    1..1',
  'ok 2 - test/b.test.ts',
  '# Subtest: test/c.test.ts',
  '    not ok 1 - timeout!',
  '      ---',
  '      signal: SIGTERM',
  '      ...',
  '    1..1',
  'not ok 3 - test/c.test.ts',
  '',
].join('\n');

t.test('failures are named by their path, innermost only, with their diagnostics', async (t) => {
  const collector = new FailureCollector();
  for (let i = 0; i < output.length; i += 7) collector.write(output.slice(i, i + 7));
  t.same(
    collector.failures.map((f) => f.path.join(' > ')),
    [
      'test/a.test.ts > creates a customer > should be equal',
      'test/a.test.ts > creates a customer > the row is stored',
      'test/c.test.ts > timeout!',
    ],
  );
  t.match(collector.failures[0].diagnostic.join('\n'), /found: 500\n.*wanted: 200/);
  t.same(collector.failures[1].diagnostic, []);
  t.match(collector.report(), /^# 3 failed:\nnot ok - test\/a\.test\.ts > creates a customer > should be equal\n/);
});

t.test('a passing run reports nothing', async (t) => {
  const collector = new FailureCollector();
  collector.write('# Subtest: x\n    ok 1 - y\n    1..1\nok 1 - x\n');
  t.equal(collector.report(), '');
});
