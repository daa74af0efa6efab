import { Alert } from '@mantine/core';

/** A refusal that names no field of the form, above it. */
export function Refused({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <Alert color="red" role="alert">
      {message}
    </Alert>
  );
}
