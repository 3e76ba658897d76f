/** Unit tier: a connection string naming several hosts, split into one URL per host and edited without losing them (api/db/primary.ts). */
import t from 'tap';
import { actingDatabaseUrl } from '../../api/db/auditContext.ts';
import { editDatabaseUrl, hostUrls } from '../../api/db/primary.ts';

t.test('each host of the list gets the credentials, database and parameters of the whole', async (t) => {
  t.same(hostUrls('postgres://u:p%40ss@h1:5432,h2:5433/settle?sslmode=require'), [
    'postgres://u:p%40ss@h1:5432/settle?sslmode=require',
    'postgres://u:p%40ss@h2:5433/settle?sslmode=require',
  ]);
  t.same(hostUrls('postgresql://[::1]:5432,10.0.0.2/db'), ['postgresql://[::1]:5432/db', 'postgresql://10.0.0.2/db'], 'IPv6 in brackets, a default port, no credentials');
});

t.test('a URL naming one host is left as it is', async (t) => {
  t.same(hostUrls('postgres://u:p@h1:5432/db'), ['postgres://u:p@h1:5432/db']);
});

t.test('editing the parameters of a multi-host URL keeps its hosts (the audit actor of the worker rides in options)', async (t) => {
  t.equal(editDatabaseUrl('postgres://u:p@h1:5432,h2:5433/db', (url) => url.searchParams.set('application_name', 'x')), 'postgres://u:p@h1:5432,h2:5433/db?application_name=x');
  const acting = actingDatabaseUrl('postgres://u:p@h1:5432,h2:5433/db', { actor: { type: 'system', name: 'worker' } });
  t.match(acting, /^postgres:\/\/u:p@h1:5432,h2:5433\/db\?options=/);
  t.same(hostUrls(acting).map((url) => new URL(url).host), ['h1:5432', 'h2:5433']);
});
