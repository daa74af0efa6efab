import { Button, Group } from '@mantine/core';
import type { ReactNode } from 'react';

/** A page form's submit button on a row of its own (`children` beside it), busy while the form is being sent. */
export function SubmitRow({ label, pending, children }: { label: string; pending: boolean; children?: ReactNode }) {
  return (
    <Group>
      <Button type="submit" loading={pending}>
        {label}
      </Button>
      {children}
    </Group>
  );
}
