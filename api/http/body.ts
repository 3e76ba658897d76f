/**
 * Request bodies: JSON, form-urlencoded and multipart, the last two with bracketed keys
 * (`payment_method[card][card_number]`, `values[0][name]`), all decoding to the same object.
 */
import busboy from 'busboy';
import type { Context, Next } from 'koa';
import qs from 'qs';
import { Readable } from 'node:stream';
import { assertSafeInput, assertSafeKeys } from '../untrustedInput.ts';
import { badRequest, payloadTooLarge } from '../errors.ts';
import type { RequestState } from './state.ts';

const QS_OPTIONS = { depth: 12, arrayLimit: 1000, parameterLimit: 20000, allowPrototypes: false, allowDots: false } as const;

async function readRaw(ctx: Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get('Content-Length') || 0);
  if (declared > limit) throw payloadTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of ctx.req) {
      size += (chunk as Buffer).length;
      if (size > limit) throw payloadTooLarge();
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    // A client that hangs up mid-body is not a server fault.
    if ((error as { code?: string }).code === 'ECONNRESET' || (error as Error).message === 'aborted') throw badRequest('The request body was cut off', { body: 'Incomplete' });
    throw error;
  }
  return Buffer.concat(chunks);
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw badRequest('Malformed JSON body', { body: 'Malformed JSON' });
  }
}

function parseForm(text: string): Record<string, unknown> {
  assertSafeKeys(new URLSearchParams(text).keys());
  return qs.parse(text, QS_OPTIONS);
}

async function parseMultipart(raw: Buffer, contentType: string): Promise<Record<string, unknown>> {
  const pairs = new Map<string, string>();
  await new Promise<void>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { fields: 20000, files: 0 } });
    } catch {
      reject(badRequest('Malformed multipart body', { body: 'Malformed multipart body' }));
      return;
    }
    parser.on('field', (name: string | undefined, value) => {
      // A part whose Content-Disposition names no field has nowhere to go in the object.
      if (!name) reject(badRequest('Malformed multipart body', { body: 'A part has no name' }));
      else pairs.set(name, value);
    });
    parser.on('file', (_name, stream) => stream.resume());
    parser.on('error', () => reject(badRequest('Malformed multipart body', { body: 'Malformed multipart body' })));
    parser.on('close', resolve);
    Readable.from([raw]).pipe(parser);
  });
  assertSafeKeys(pairs.keys());
  return qs.parse(qs.stringify(Object.fromEntries(pairs), { encode: true }), QS_OPTIONS) as Record<string, unknown>;
}

export function createBodyParser(limit: number) {
  return async function parseBody(ctx: Context & { state: RequestState }, next: Next): Promise<void> {
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return next();
    const raw = await readRaw(ctx, limit);
    let body: unknown = {};
    if (raw.length > 0) {
      const type = (ctx.get('Content-Type') || 'application/json').toLowerCase();
      if (type.includes('json')) body = parseJson(raw);
      else if (type.startsWith('application/x-www-form-urlencoded')) body = parseForm(raw.toString('utf8'));
      else if (type.startsWith('multipart/form-data')) body = await parseMultipart(raw, ctx.get('Content-Type'));
      else throw badRequest('Unsupported Content-Type', { 'Content-Type': 'Use application/json, application/x-www-form-urlencoded or multipart/form-data' });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('The body must be a JSON object', { body: 'Must be an object' });
    }
    assertSafeInput(body);
    ctx.state.body = body as Record<string, unknown>;
    await next();
  };
}
