import { notifications } from '@mantine/notifications';

/** A short confirmation; its close button is named in the UI's language. */
export const notify = (message: string, closeLabel: string) =>
  notifications.show({ message, closeButtonProps: { 'aria-label': closeLabel } });
