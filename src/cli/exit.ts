/** Exit codes (DESIGN.md): the contract scripts rely on. */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  unreachable: 3,
} as const;

/** An error the user has been told about in plain words; only its exit code is left to apply. */
export class ExitError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ExitError';
  }
}

export function usageError(message: string, options?: { cause?: unknown }): ExitError {
  return new ExitError(EXIT.usage, message, options);
}

/** Every error line starts the same way, commander's own ("error: …") included. */
export function prefixed(text: string): string {
  return text.replace(/^error: /, 'stream-posts: ');
}
