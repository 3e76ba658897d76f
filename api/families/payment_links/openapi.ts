/**
 * The payment link actions beyond the generic operations (api/http/paymentLinkRoutes.ts), described
 * for `/openapi.json` beside the generated collections: its e-mail sent again.
 */
import type { Version } from '../../engine/family.ts';
import { curlSample, errorAnswer, type Schema } from '../../openapiActions.ts';
import { sampleId } from '../../openapiSamples.ts';
import { collectionByPath } from '../index.ts';

export function paymentLinkActionPaths(version: Version): Record<string, Schema> {
  const id = sampleId(collectionByPath.get('payment_links')!);
  return {
    '/payment_links/{id}/resend_email': {
      post: {
        tags: ['payment_links'], operationId: 'resend_payment_link_email',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        summary: 'Send a payment link\'s e-mail again',
        description: 'Queues one more message of the link\'s e-mail (what it is for, the amount due, its page) to the e-mail address of its customer, sent by the worker like the first. Each resend is a new message, numbered by `resend` (the first message is 0). Audited as `resend_email`. Takes no fields.',
        responses: {
          '200': {
            description: 'The message, queued',
            content: {
              'application/json': {
                schema: {
                  type: 'object', required: ['object', 'id', 'payment_link_id', 'recipient', 'resend'],
                  properties: {
                    object: { const: 'payment_link_email' }, id: { type: 'string' }, payment_link_id: { type: 'string' },
                    recipient: { type: 'string', format: 'email' }, resend: { type: 'integer', minimum: 1 },
                  },
                },
              },
            },
          },
          '400': errorAnswer('InvalidAttributes: a field was sent (this takes none)'),
          '404': errorAnswer('NotFound: no such payment link (another org\'s included)'),
          '409': errorAnswer('Conflict: the link is not active (completed or inactive), or its customer has no e-mail address'),
        },
        'x-codeSamples': curlSample(version, `/payment_links/${id}/resend_email`, '-X POST'),
      },
    },
  };
}
