// Synchronized output (DEC mode 2026): a terminal that knows it shows the frame at once,
// one that does not ignores the mode.
const BEGIN = '\u001B[?2026h';
const END = '\u001B[?2026l';
const CLEAR = '\u001B[H\u001B[2J';

/**
 * Writes frames of lines to a full screen, each line already cut to the width: only the
 * lines that differ from the last frame, each as cursor position, erase line, line, all
 * in one write. A new size (or the first frame) clears and writes every line.
 */
export class ScreenWriter {
  readonly #write: (data: string) => void;
  #last: string[] = [];
  #size = '';

  constructor(write: (data: string) => void) {
    this.#write = write;
  }

  /** Draws `lines` on a screen `width` × `lines.length`; returns whether anything was written. */
  draw(lines: readonly string[], width: number): boolean {
    const size = `${width}x${lines.length}`;
    const whole = size !== this.#size;
    let out = whole ? CLEAR : '';
    for (let row = 0; row < lines.length; row++) {
      const line = lines[row]!;
      if (whole ? line === '' : line === this.#last[row]) continue;
      // Erased before it is written: a line that fills the width leaves the cursor on its last
      // column, where an erase after it would take that column away.
      out += `\u001B[${row + 1};1H\u001B[2K${line}`;
    }
    this.#last = [...lines];
    this.#size = size;
    if (out === '') return false;
    this.#write(`${BEGIN}${out}${END}`);
    return true;
  }

  /** The next frame is drawn whole (the screen was disturbed). */
  invalidate(): void {
    this.#size = '';
  }
}
