import { z } from 'zod';
import { timestamp } from '../common/schemas.ts';

export const signFileInput = z.object({ fileKey: z.string().min(1).max(64) });
export const signedFileSchema = z.object({ url: z.string(), expires_at: timestamp });
