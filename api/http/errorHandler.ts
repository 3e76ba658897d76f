/**
 * The web process's error middleware, outermost in the chain: every error a request raises is
 * answered through `errorResponse` (api/errors.ts); anything unexpected is logged with its stack.
 */
import type { Context, Next } from 'koa';
import { ApiError, errorResponse } from '../errors.ts';
import type { RequestState } from './state.ts';

export async function errorHandler(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) throw new ApiError(404, 'NotFound', `No route for ${ctx.method} ${ctx.path}`);
  } catch (error) {
    const response = errorResponse(error);
    // Unexpected errors are logged with their stack; a deliberate 503 (a dependency down) is logged
    // once by whoever watches that dependency, not once per request.
    if (!(error instanceof ApiError) && response.status >= 500) ctx.state.log?.error({ err: error }, 'request failed');
    ctx.status = response.status;
    ctx.set(response.headers);
    ctx.body = response.body;
  }
}
