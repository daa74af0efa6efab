import { Group, Progress, Text } from '@mantine/core';

/** A task's progress bar with its percentage beside it; `label` names the bar for assistive technology. */
export function TaskProgress({ value, label }: { value: number; label: string }) {
  return (
    <Group gap="xs" wrap="nowrap">
      <Progress value={value} flex={1} aria-label={label} />
      <Text size="sm">{value}%</Text>
    </Group>
  );
}
