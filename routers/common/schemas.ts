import { z } from 'zod';

/** A path id: validated before any query so a non-UUID answers 400 naming the field. */
export const idParam = z.object({ id: z.uuid() });

export const paginationInput = z.object({
  current: z.number().int().min(1).default(1),
  page_size: z.number().int().min(1).max(100).default(10),
});
export type Pagination = z.infer<typeof paginationInput>;

export const searchInput = paginationInput.extend({ search: z.string().max(128).optional() });

export { timestamp, uuidString } from '../../lib/schema-formats.ts';

/** The output of a list procedure; REST adds `code: "0"` around it. */
export function listOutput<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item),
    total: z.number().int(),
    current: z.number().int(),
    page_size: z.number().int(),
  });
}

export function page<T>(data: T[], total: number, p: Pagination) {
  return { data, total, current: p.current, page_size: p.page_size };
}

export const offsetOf = (p: Pagination) => (p.current - 1) * p.page_size;

export const messageOutput = z.object({ message: z.string() });

/** The input of a procedure without parameters: a tRPC client calls it with none (`auth.me.query()`). */
export const noInput = z.object({}).optional();
