// What `serve --replay` adds to serve: its flags checked together, passed to startServer, and
// the account printed at the end of what the recording answered and what of it went unused.
import type { ReplayReport, StartServerOptions } from '../index.js';
import { usageError } from './exit.js';

export interface ServeReplayFlags {
  replay?: string;
  replaySpeed?: string;
  replayTimes?: 'shifted' | 'as-recorded';
  replayIgnore?: string[];
  replayFallback?: boolean;
  replayStrict?: boolean;
  workers?: number;
}

/** startServer's replay options from the flags (usage errors for flags that need --replay or cannot go with it). */
export function replayOptions(flags: ServeReplayFlags): Partial<StartServerOptions> {
  if (flags.replay === undefined) {
    const without = (
      [
        ['--replay-speed', flags.replaySpeed],
        ['--replay-times', flags.replayTimes],
        ['--replay-ignore', flags.replayIgnore],
        ['--replay-fallback', flags.replayFallback],
        ['--replay-strict', flags.replayStrict],
      ] as const
    ).find(([, value]) => value !== undefined);
    if (without) throw usageError(`${without[0]} needs --replay FILE`);
    return {};
  }
  if ((flags.workers ?? 1) > 1)
    throw usageError('--replay serves from one process: it cannot be combined with --workers above 1');
  return {
    replay: flags.replay,
    ...(flags.replaySpeed === undefined ? {} : { replaySpeed: flags.replaySpeed as StartServerOptions['replaySpeed'] }),
    ...(flags.replayTimes === undefined ? {} : { replayTimes: flags.replayTimes }),
    ...(flags.replayIgnore === undefined ? {} : { replayIgnore: flags.replayIgnore }),
    ...(flags.replayFallback === undefined ? {} : { replayFallback: flags.replayFallback }),
  };
}

/** The end-of-run account: every recorded exchange no live one used, and what matched nothing. */
export function formatReplayReport(report: ReplayReport): string {
  const lines: string[] = [];
  const { unusedConnections, unusedRequests, unreachedFrames, unmatched } = report;
  if (unusedConnections.length + unusedRequests.length === 0)
    lines.push('replay: every recorded connection and request was used');
  for (const { id, transport, path } of unusedConnections)
    lines.push(`replay: recorded connection ${id} (${transport} ${path}) was never used`);
  for (const { id, method, path } of unusedRequests)
    lines.push(`replay: recorded request ${id} (${method} ${path}) was never used`);
  for (const { connection, frames } of unreachedFrames)
    lines.push(
      `replay: recorded connection ${connection}: ${frames} client frame${frames === 1 ? '' : 's'} never sent`,
    );
  if (unmatched > 0)
    lines.push(
      `replay: ${unmatched} connection${unmatched === 1 ? '' : 's'}, frame${unmatched === 1 ? '' : 's'} or request${unmatched === 1 ? '' : 's'} matched nothing recorded`,
    );
  return `${lines.join('\n')}\n`;
}

/** `--replay-strict`: whether the run fails (something matched nothing, or a recorded exchange went unused). */
export function replayFailed(report: ReplayReport): boolean {
  return report.unmatched > 0 || report.unusedConnections.length > 0 || report.unusedRequests.length > 0;
}
