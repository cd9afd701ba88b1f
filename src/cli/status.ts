import type { ClientState } from '../index.js';
import { createStatusReporter, type StatusReporter } from '../render/status.js';
import type { CommonOptions } from './common.js';

/** Status on stderr: a spinner on a colour terminal, plain lines otherwise, nothing with --quiet. */
export function statusFor(
  options: Pick<CommonOptions, 'stderrColor' | 'quiet' | 'verbose' | 'trace'>,
  quietUnlessVerbose = false,
): Promise<StatusReporter> {
  // ora cannot clear its line on a terminal that reports no width (it loops forever); a
  // trace's lines would be drawn over by it.
  const spinner =
    process.stderr.isTTY === true &&
    (process.stderr.columns ?? 0) > 0 &&
    options.stderrColor &&
    !options.quiet &&
    options.trace === undefined;
  return createStatusReporter({
    stream: process.stderr,
    spinner,
    color: options.stderrColor,
    // Scripts and cron jobs mail whatever reaches stderr: a one-shot command stays silent there unless asked.
    quiet: options.quiet || (quietUnlessVerbose && !spinner && !options.verbose),
    verbose: options.verbose,
  });
}

/** Connection states as status lines or spinner text. */
export function describeState(state: ClientState, status: StatusReporter): void {
  if (state.kind === 'connecting')
    status.connecting(state.attempt === 0 ? state.url : `${state.url} (attempt ${state.attempt + 1})`);
  else if (state.kind === 'reconnecting') status.reconnecting(state.delayMs, state.reason);
}
