import { Alert } from '@mantine/core';
import { messageOf } from './api.ts';

/** A failed call's message from the service, where the form that made it shows it; nothing without an error. */
export function ErrorAlert({ error }: { error: unknown }) {
  return error ? (
    <Alert color="red" role="alert">
      {messageOf(error)}
    </Alert>
  ) : null;
}
