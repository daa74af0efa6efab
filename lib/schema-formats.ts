import { z } from 'zod';

/** A time as the API writes it (ISO 8601, UTC); documented as such, not checked on output. */
export const timestamp = z.string().meta({ format: 'date-time' });

/** An id the server made (a UUID); documented as one without checking what the database hands back. */
export const uuidString = z.string().meta({ format: 'uuid' });
