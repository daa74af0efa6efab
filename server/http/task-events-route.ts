import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { fieldError } from '../../lib/errors.ts';
import type { Services } from '../../routers/common/services.ts';
import { taskEventsQuery } from '../../routers/task-events/schemas.ts';
import { EVENTS_PERMISSION } from '../../routers/task-events/service.ts';
import type { Subscription } from '../../routers/task-events/subscription.ts';
import { errorResponse } from './openapi-parts.ts';
import { requestInfo } from './request-info.ts';

/** A comment line this often keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;
/** How long a browser's EventSource waits before it reconnects. */
const RETRY_MS = 3000;

/** The stream's frames: the retry hint, then each event as `id:` and `data:` lines, with `: ping` between. */
export async function* frames(sub: Subscription, sent: () => void): AsyncGenerator<string> {
  yield `retry: ${RETRY_MS}\n\n`;
  const events = sub[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  try {
    let next = events.next();
    for (;;) {
      const beat = new Promise<'ping'>((resolve) => (timer = setTimeout(() => resolve('ping'), HEARTBEAT_MS)));
      const got = await Promise.race([next, beat]);
      clearTimeout(timer);
      if (got === 'ping') {
        yield ': ping\n\n';
        continue;
      }
      if (got.done) return;
      sent();
      yield `id: ${got.value.id}\ndata: ${JSON.stringify(got.value)}\n\n`;
      next = events.next();
    }
  } finally {
    clearTimeout(timer);
    sub.close();
  }
}

/**
 * `GET /api/tasks/events` (README "Live task events"): the caller's visible task events as server-sent events,
 * for a browser's EventSource (with a ticket, `POST /tasks/events/ticket`) or any client sending the bearer
 * token. Failures before the stream starts answer the usual envelope (401, 403, 429, 400). Registered inside
 * the /api scope.
 */
export function registerTaskEventRoutes(api: FastifyInstance, services: Services): void {
  api.get('/tasks/events', async (request, reply) => {
    const parsed = taskEventsQuery.safeParse(request.query);
    if (!parsed.success) throw fieldError(String(parsed.error.issues[0]?.path[0] ?? 'query'), 'validation.invalid');
    const q = parsed.data;
    const req = requestInfo(request);
    const events = services.taskEvents;
    const caller = q.ticket !== undefined ? await events.redeem(q.ticket) : await services.auth.authenticate(req);
    req.identified?.(caller.id);
    const header = request.headers['last-event-id'];
    const sub = await events.open(
      caller,
      {
        taskId: q.task_id,
        org: q.org_id,
        orgHeader: req.orgHeader,
        lastEventId: typeof header === 'string' ? header : q.last_event_id,
      },
      'sse',
    );
    // The client went: the stream ends now, not at its next write.
    reply.raw.on('close', () => sub.close());
    return reply
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-accel-buffering', 'no')
      .send(Readable.from(frames(sub, () => events.metrics.sent.inc({ transport: 'sse' }))));
  });
}

const queryParameter = (name: string, description: string, schema: Record<string, unknown>) => ({
  name,
  in: 'query',
  required: false,
  schema,
  description,
});

/** The route's entry in the OpenAPI document (a stream is a plain Fastify route, not a procedure). */
export const taskEventRouteDocs = {
  '/tasks/events': {
    get: {
      operationId: 'tasks-events',
      tags: ['Tasks'],
      summary: 'Live task events (server-sent events): every change of a task the caller may see',
      description:
        '`text/event-stream` of the tasks the caller may see (as `GET /tasks`: administrators every task, others their own; `X-Scope-OrgID` or `org_id` one organization\'s), each change as `id: <event id>` and `data: {"id", "task"}`, where `task` is what `GET /tasks/{id}` answers: created, each status change, and progress (at most 4 a second per task). The stream starts with the current state of the visible tasks that are pending, running or finished in the last 24 hours, or, with `Last-Event-ID` (header) or `last_event_id` still within the 15-minute retention, with every event since that id. `: ping` comments every 15 s. Authenticated by the bearer token or by a `ticket` from `POST /tasks/events/ticket` (for EventSource, which sends no headers). Ends when the session does, or when the caller no longer holds `task:list` (globally or in the organization in use). README "Live task events".',
      parameters: [
        queryParameter('ticket', 'A single-use ticket from `POST /tasks/events/ticket`, instead of the bearer token', {
          type: 'string',
          minLength: 1,
          maxLength: 128,
        }),
        queryParameter('task_id', 'Only this task’s events (starting with its current state)', {
          type: 'string',
          format: 'uuid',
        }),
        queryParameter(
          'org_id',
          'Only this organization’s tasks (as `X-Scope-OrgID`, which browsers cannot send; with both, the same id)',
          {
            type: 'string',
            format: 'uuid',
          },
        ),
        queryParameter('last_event_id', 'Resume after this event id (as the `Last-Event-ID` header)', {
          type: 'string',
          maxLength: 32,
        }),
        {
          name: 'Last-Event-ID',
          in: 'header',
          required: false,
          schema: { type: 'string', maxLength: 32 },
          description: 'Resume after this event id (an EventSource sends it when it reconnects)',
        },
        { $ref: '#/components/parameters/OrgScope' },
      ],
      security: [{ bearerAuth: [] }, {}],
      'x-permission': EVENTS_PERMISSION,
      responses: {
        '200': {
          description: 'The event stream; each `data:` line is one event',
          content: {
            'text/event-stream': {
              schema: {
                type: 'object',
                description: 'One event (the JSON of a `data:` line)',
                required: ['id', 'task'],
                properties: {
                  id: { type: 'string', description: 'The event id, also sent as `id:`' },
                  task: { $ref: '#/components/schemas/Task' },
                },
              },
            },
          },
        },
        '400': errorResponse(
          'E4001: an invalid query parameter, named; `org_id` naming another organization than `X-Scope-OrgID`',
        ),
        '401': errorResponse(
          'E4011: no token and no ticket, or an invalid, used or expired ticket; E4012: the user is deleted, disabled or locked',
        ),
        '403': errorResponse(
          'E4031: the caller lacks `task:list` (globally or in the organization in use), or is not a member of it',
        ),
        '429': errorResponse('E4291: `events.max_streams_per_user` streams of this user are open on this node'),
      },
    },
  },
};
