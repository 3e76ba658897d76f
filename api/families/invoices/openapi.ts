/**
 * The invoice actions beyond the generic operations (api/http/invoiceRoutes.ts), described for
 * `/openapi.json` beside the generated collections: its e-mail to its customer.
 */
import type { Version } from '../../engine/family.ts';
import { curlSample, errorAnswer, type Schema } from '../../openapiActions.ts';
import { sampleId } from '../../openapiSamples.ts';
import { collectionByPath } from '../index.ts';

export function invoiceActionPaths(version: Version): Record<string, Schema> {
  const id = sampleId(collectionByPath.get('invoices')!);
  const answer = {
    type: 'object', required: ['object', 'id', 'invoice_id', 'recipient', 'resend', 'payment_link_id', 'url'],
    properties: {
      object: { const: 'invoice_email' }, id: { type: 'string' }, invoice_id: { type: 'string' },
      recipient: { type: 'string', format: 'email' }, resend: { type: 'integer', minimum: 0 },
      payment_link_id: { type: 'string' }, url: { type: 'string', format: 'uri' },
    },
  };
  return {
    '/invoices/{id}/resend_email': {
      post: {
        tags: ['invoices'], operationId: 'resend_invoice_email',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        summary: 'E-mail an invoice to its customer',
        description: 'Queues a message to the e-mail address of the invoice\'s customer (its number, description, balance due and due date, and the page to pay it at), sent by the worker. The page is an active payment link for the invoice\'s balance: the newest such link, or a one-time link made now (which sends no e-mail of its own). Creating an invoice sends nothing; each call is a new message, numbered by `resend` (the first is 0). Audited as `resend_email`. Takes no fields.',
        responses: {
          '200': { description: 'The message, queued', content: { 'application/json': { schema: answer } } },
          '400': errorAnswer('InvalidAttributes: a field was sent (this takes none)'),
          '403': errorAnswer('Forbidden: a restricted key without both invoices:write and payment_links:write (the message may make a payment link)'),
          '404': errorAnswer('NotFound: no such invoice (another org\'s included)'),
          '409': errorAnswer('Conflict: nothing is due (a draft, paid or closed invoice), or its customer has no e-mail address'),
        },
        'x-codeSamples': curlSample(version, `/invoices/${id}/resend_email`, '-X POST'),
      },
    },
  };
}
