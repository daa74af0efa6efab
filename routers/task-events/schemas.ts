import { z } from 'zod';
import { timestamp } from '../common/schemas.ts';
import { taskSchema } from '../tasks/schemas.ts';

export const eventTicketSchema = z
  .object({
    ticket: z.string().meta({ description: 'Single use, for `GET /tasks/events?ticket=`' }),
    expires_at: timestamp,
  })
  .meta({ id: 'TaskEventTicket' });

/** The subscription's input; `lastEventId` is what tRPC's client sends when it resumes (tracked ids). */
export const taskEventsInput = z
  .object({
    task_id: z.uuid().optional(),
    org_id: z.uuid().optional(),
    lastEventId: z.string().max(32).nullish(),
  })
  .optional();

/** The query of `GET /tasks/events`. */
export const taskEventsQuery = z.object({
  ticket: z.string().min(1).max(128).optional(),
  task_id: z.uuid().optional(),
  org_id: z.uuid().optional(),
  last_event_id: z.string().max(32).optional(),
});

/** One live event: its id in the events log (resume after it), and the task as `GET /tasks/{id}` answers it. */
export const taskEventSchema = z.object({ id: z.string(), task: taskSchema }).meta({ id: 'TaskEvent' });
export type TaskEventJson = z.output<typeof taskEventSchema>;
