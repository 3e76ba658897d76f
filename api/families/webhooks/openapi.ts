/**
 * The webhook actions beyond the generic operations (api/http/webhookRoutes.ts), described for
 * `/openapi.json` beside the generated collections: resend, test and rotate_secret.
 */
import type { Version } from '../../engine/family.ts';
import { curlSample, errorAnswer, formOrJsonBody, type Schema } from '../../openapiActions.ts';
import { sampleId } from '../../openapiSamples.ts';
import { collectionByPath } from '../index.ts';

const TIMESTAMP = { type: 'string', description: 'UTC `YYYY-MM-DD HH:MM:SS` (or ISO 8601)' };

export function webhookActionPaths(version: Version): Record<string, Schema> {
  const id = sampleId(collectionByPath.get('webhooks')!);
  const parameters = [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }];
  const tags = ['webhooks'];
  return {
    '/webhooks/{id}/resend': {
      post: {
        tags, operationId: 'resend_webhook', parameters,
        summary: 'Resend events to a webhook',
        description: 'One event (`event_id`, answered with the delivery it starts), or every event of the webhook\'s trigger in a window (`since`, `until`), in commit order, each a new attempt series with the same event id. With `only_missed: true` only the events recorded against the webhook with no successful delivery (skipped while it was disabled, or failed); run twice, the second finds nothing.',
        requestBody: formOrJsonBody({
          type: 'object',
          properties: {
            event_id: { type: 'string' }, since: TIMESTAMP, until: { ...TIMESTAMP, description: 'not before `since`' },
            only_missed: { type: 'boolean', default: false },
          },
        }),
        responses: {
          '200': {
            description: 'OK',
            content: {
              'application/json': {
                schema: {
                  oneOf: [
                    { type: 'object', required: ['object', 'webhook_id', 'events'], properties: { object: { const: 'webhook_resend' }, webhook_id: { type: 'string' }, events: { type: 'integer' } } },
                    { type: 'object', required: ['object', 'values'], properties: { object: { const: 'list' }, values: { type: 'array', items: { type: 'object', properties: { object: { const: 'webhook_delivery' }, id: { type: 'string' }, event_id: { type: 'string' }, series: { type: 'integer' } } } } } },
                  ],
                },
              },
            },
          },
          '400': errorAnswer('InvalidAttributes: `until` before `since`, a window of more events than one resend takes, `only_missed` not a boolean'),
          '404': errorAnswer('NotFound: no such webhook (another org\'s included)'),
        },
        'x-codeSamples': curlSample(version, `/webhooks/${id}/resend`, '-d since="2026-11-25 00:00:00" -d only_missed=true'),
      },
    },
    '/webhooks/{id}/test': {
      post: {
        tags, operationId: 'send_webhook_test_event', parameters,
        summary: 'Send a webhook a test event',
        description: 'One delivery to this webhook alone (no other webhook receives it): an event of the webhook\'s trigger about the webhook itself (`triggered_on: {id: <webhook id>, object: "webhook", value: {test: true}}`), with `"test": true` in the body, signed and sent like any delivery, logged in the webhook\'s logs and retried on its schedule. Resends never choose it. Audited as `send_test_event`. Takes no fields.',
        responses: {
          '200': {
            description: 'The delivery, on its way',
            content: {
              'application/json': {
                schema: {
                  type: 'object', required: ['object', 'id', 'webhook_id', 'event_id', 'series', 'test'],
                  properties: { object: { const: 'webhook_delivery' }, id: { type: 'string' }, webhook_id: { type: 'string' }, event_id: { type: 'string' }, series: { const: 0 }, test: { const: true } },
                },
              },
            },
          },
          '400': errorAnswer('InvalidAttributes: a field was sent (this takes none)'),
          '404': errorAnswer('NotFound: no such webhook (another org\'s included)'),
          '409': errorAnswer('Conflict: the webhook is disabled (a delivery to it would not be sent)'),
        },
        'x-codeSamples': curlSample(version, `/webhooks/${id}/test`, '-X POST'),
      },
    },
    '/webhooks/{id}/rotate_secret': {
      post: {
        tags, operationId: 'rotate_webhook_secret', parameters,
        summary: 'Rotate a webhook\'s signing secret',
        description: 'Answers the webhook with its new `sender_secret`, shown this once. Until `previous_expires_in` seconds pass, `webhook-signature` carries a signature under the new and the old secret (`v1,<new> v1,<old>`) and `X-Service-Signature` the new one\'s; then only the new one. A rotation during an overlap ends the oldest secret at once.',
        requestBody: formOrJsonBody({ type: 'object', properties: { previous_expires_in: { type: 'integer', minimum: 0, maximum: 604800, default: 86400 } } }),
        responses: {
          '200': { description: 'OK', content: { 'application/json': { schema: { $ref: '#/components/schemas/Webhooks' } } } },
          '400': errorAnswer('InvalidAttributes: `previous_expires_in` not a whole number of seconds from 0 to 604800'),
          '404': errorAnswer('NotFound'),
        },
        'x-codeSamples': curlSample(version, `/webhooks/${id}/rotate_secret`, '-d previous_expires_in=86400'),
      },
    },
  };
}
