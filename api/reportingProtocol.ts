/**
 * The reporting process's wire contract with its one client, the web process
 * (api/http/reportingProxy.ts; reporting/server.ts answers it). Errors travel as the API's own
 * error bodies (`errorResponse`, api/errors.ts). Types only, on the floor both processes share, so
 * neither side imports the other.
 */

/** Body of POST /query on the reporting process. */
export interface ReportingQuery {
  tenant: { orgId: string; environment: string };
  version: string;
  /** the collection's fixed type, if any */
  type?: string;
  /** the request's query string, decoded pairs in order */
  params: Array<[string, string]>;
  /** the request's Postgres snapshot (`xmin:xmax:xip`): the answer must reflect every transaction committed before it */
  snapshot: string;
}
