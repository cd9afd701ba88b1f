import { stripVTControlCharacters } from 'node:util';
import type { ChalkInstance } from 'chalk';
import Table from 'cli-table3';

/** A markdown table's column alignment, as marked gives it. */
export type Alignment = 'left' | 'center' | 'right' | null;

const widest = (text: string): number =>
  Math.max(0, ...text.split('\n').map((line) => stripVTControlCharacters(line).length));

/**
 * A markdown table for a terminal `width` columns wide: a box with each column aligned
 * as the table says, or, when the box would not fit (a box folded by the terminal is
 * unreadable), one record per block, each cell under its column's name.
 */
export function drawTable(
  head: string[],
  rows: string[][],
  align: Alignment[],
  width: number,
  c: ChalkInstance,
): string {
  const table = new Table({
    head,
    colAligns: head.map((_, column) => align[column] ?? 'left'),
    // cli-table3 heads tables in red, which reads as an error; its colours follow its own
    // detection, so they are chosen here (none without colour).
    style: c.level > 0 ? { head: ['bold'], border: ['grey'] } : { head: [], border: [] },
  });
  table.push(...rows);
  const box = table.toString();
  if (widest(box) <= width) return box;
  return rows
    .map((row) =>
      head.map((name, column) => `${c.bold(`${stripVTControlCharacters(name)}:`)} ${row[column] ?? ''}`).join('\n'),
    )
    .join('\n\n');
}
