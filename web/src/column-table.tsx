import { Table } from '@mantine/core';
import type { ReactNode } from 'react';

/** One column of a table: its header, and what each row shows in it. */
export interface Column<Row> {
  label: string;
  cell: (row: Row) => ReactNode;
  /** The cell's least width, for content that would otherwise shrink away (a progress bar). */
  minWidth?: number;
}

/**
 * Rows of one kind as a table: a header of the columns' labels and a cell per column, scrolling sideways in its
 * own box below `minWidth`. `idAttribute` marks each row with its id (`data-task-id`), for the tests and the
 * pages that find a row again.
 */
export function ColumnTable<Row extends { id: string }>(props: {
  columns: Column<Row>[];
  rows: Row[];
  minWidth: number;
  idAttribute?: `data-${string}`;
  highlightOnHover?: boolean;
}) {
  const { columns, idAttribute } = props;
  return (
    <Table.ScrollContainer minWidth={props.minWidth}>
      <Table striped highlightOnHover={props.highlightOnHover}>
        <Table.Thead>
          <Table.Tr>
            {columns.map((c) => (
              <Table.Th key={c.label}>{c.label}</Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {props.rows.map((row) => (
            <Table.Tr key={row.id} {...(idAttribute ? { [idAttribute]: row.id } : {})}>
              {columns.map((c) => (
                <Table.Td key={c.label} miw={c.minWidth}>
                  {c.cell(row)}
                </Table.Td>
              ))}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
