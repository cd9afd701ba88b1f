/** The shells `completion` writes a script for (kept apart so `--help` does not load the generator). */
export const COMPLETION_SHELLS = ['bash', 'zsh', 'fish'] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];
