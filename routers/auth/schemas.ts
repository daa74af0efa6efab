import { z } from 'zod';
import { timestamp, uuidString } from '../common/schemas.ts';
import { userSchema } from '../users/schemas.ts';

export const currentUserSchema = userSchema
  .extend({
    permissions: z.array(z.string()),
    roles: z.array(z.object({ id: uuidString, name: z.string(), permissions: z.array(z.string()) })),
    password_generated: z
      .boolean()
      .describe('true while the password is the one generated at the first start (change it)'),
  })
  .meta({ id: 'CurrentUser' });

export const tokenSchema = z.object({ token: z.string(), expires_at: timestamp });
/** A completed login's answer (password, MFA or OAuth). */
export const loginResult = tokenSchema.extend({ user: userSchema }).meta({ id: 'LoginResult' });
export type LoginResult = z.infer<typeof loginResult>;
/** The first step of a login with MFA by email: the code went out, the token names this login attempt. */
const mfaChallenge = z.object({ mfa_required: z.literal(true), mfa_token: z.string() }).meta({ id: 'MfaChallenge' });
export type MfaChallenge = z.infer<typeof mfaChallenge>;

/** Either username and password, or the MFA token a first call answered with the mailed code. */
export const loginInput = z.object({
  username: z.string().min(1).max(255).optional(),
  password: z.string().min(1).max(1024).optional(),
  mfa_token: z.string().min(1).max(255).optional(),
  mfa_code: z.string().min(1).max(32).optional(),
});
export type LoginInput = z.infer<typeof loginInput>;
export const loginOutput = z.union([loginResult, mfaChallenge]);

export const requestPasswordResetInput = z.object({ email: z.string().min(1).max(255) });
export const confirmPasswordResetInput = z.object({
  token: z.string().min(1).max(255),
  password: z.string().min(1).max(128),
});
export const changePasswordInput = z.object({
  old_password: z.string().min(1).max(1024),
  new_password: z.string().min(1).max(128),
});
/** The caller's own changes; a new email or an MFA change also needs the current password. */
export const updateMeInput = z.object({
  full_name: z.string().max(255).optional(),
  email: z.email().max(255).optional(),
  mfa_enabled: z.boolean().optional(),
  password: z.string().min(1).max(1024).optional(),
});
export type UpdateMe = z.infer<typeof updateMeInput>;
