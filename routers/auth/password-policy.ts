import { fieldError } from '../../lib/errors.ts';

export const MAX_PASSWORD_LENGTH = 128;

/** The password policy: `min` (the `password_min_length` setting) to 128 characters; 400 naming `field` else. */
export function checkPasswordLength(password: string, min: number, field = 'password'): void {
  if (password.length < min || password.length > MAX_PASSWORD_LENGTH)
    throw fieldError(field, 'validation.length_between', { min, max: MAX_PASSWORD_LENGTH });
}
