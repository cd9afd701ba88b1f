/**
 * An OSC 8 hyperlink: `text` shows, the terminal opens `url`. The URL must come
 * through `terminalSafe` first: a BEL or ESC inside it would end the sequence early.
 */
export function hyperlink(url: string, text: string): string {
  return `\u001B]8;;${url}\u0007${text}\u001B]8;;\u0007`;
}

function atLeast(version: string | undefined, major: number, minor: number): boolean {
  const match = /^(\d+)\.(\d+)/.exec(version ?? '');
  if (!match) return false;
  const [actualMajor, actualMinor] = [Number(match[1]), Number(match[2])];
  return actualMajor > major || (actualMajor === major && actualMinor >= minor);
}

/**
 * Whether OSC 8 hyperlinks will work. Conservative: a terminal that does not
 * know the sequence may print it as garbage, so only terminals known to support
 * it say yes. Multiplexers forward it unreliably, so they say no.
 */
export function supportsHyperlinks(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  const forced = env['FORCE_HYPERLINK'];
  if (forced !== undefined && forced !== '') return forced !== '0';
  if (stream.isTTY !== true) return false;
  const term = env['TERM'] ?? '';
  if (term === 'dumb' || term.startsWith('screen') || term.startsWith('tmux') || env['TMUX'] !== undefined)
    return false;
  if (env['WT_SESSION'] !== undefined) return true;
  if (term === 'xterm-kitty' || term === 'xterm-ghostty' || env['KITTY_WINDOW_ID'] !== undefined) return true;
  const vte = env['VTE_VERSION'];
  // VTE (GNOME Terminal, Tilix, …) supports OSC 8 from 0.50, written "5000".
  if (vte !== undefined && /^\d+$/.test(vte) && Number(vte) >= 5000) return true;
  switch (env['TERM_PROGRAM']) {
    case 'iTerm.app':
      return atLeast(env['TERM_PROGRAM_VERSION'], 3, 1);
    case 'vscode':
      return atLeast(env['TERM_PROGRAM_VERSION'], 1, 72);
    case 'WezTerm':
    case 'ghostty':
      return true;
    default:
      return false;
  }
}
