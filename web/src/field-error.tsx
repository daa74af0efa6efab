import { Alert } from '@mantine/core';
import { appCodeOf, messageOf } from './api.ts';

/** A refused call's message, and the field it belongs beside when it is an E4001 naming one of `fields`. */
export interface Refusal {
  field: string | undefined;
  message: string;
}

// The service names the field first: "password_min_length: must be at least 6".
export function refusalOf(error: unknown, fields: readonly string[]): Refusal | undefined {
  if (!error) return undefined;
  const message = messageOf(error);
  const named = message.match(/^([\w.]+): (.*)$/s);
  const field = appCodeOf(error) === 'E4001' && named && fields.includes(named[1]!) ? named[1] : undefined;
  return { field, message: field ? named![2]! : message };
}

/** A refusal that names no field of the form, above it. */
export function Refused({ refusal }: { refusal: Refusal | undefined }) {
  if (!refusal || refusal.field) return null;
  return (
    <Alert color="red" role="alert">
      {refusal.message}
    </Alert>
  );
}
