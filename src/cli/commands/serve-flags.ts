// `serve`'s flags, read from the option table (src/api/serve-options.ts); the command itself
// is serve.ts, loaded only when it runs.
import { Option, InvalidArgumentError, type Command } from '@commander-js/extra-typings';
import { replaySpeedOf, SERVE_OPTIONS, type ServeOption } from '../../api/internal.js';
import type { CommandContext } from '../command-context.js';
import { colorWanted, positiveInteger } from '../common.js';
import { collectList, parseBytes, parseDuration, parseNonNegativeInteger, parsePort, parseTimeout } from '../parse.js';

/** A serve option's default as --help shows it: the doc's wording, without its code marks. */
const shown = (option: ServeOption): string => option.shownDefault.replaceAll('`', '');

/**
 * A flag whose value a parser reads (a duration, a size), with the table's default as --help
 * shows it: every such row of the table is declared alike.
 */
function parsedOption<const Usage extends string>(
  row: ServeOption & { readonly flag: Usage; readonly default: number },
  parse: (text: string) => number,
) {
  return new Option(row.flag, row.doc).argParser(parse).default(row.default, shown(row));
}

/** A byte cap, where 0 means none. */
const parseBytesOrZero = (text: string): number => (text.trim() === '0' ? 0 : parseBytes(text));

function parseSpeed(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0 || value > 1_000_000) {
    throw new InvalidArgumentError(`expected a number above 0 (e.g. 10 for ten times faster), got "${text}"`);
  }
  return value;
}

/** `--replay-speed`: checked here, passed on as written (startServer reads `recorded`, `max` or a number). */
function parseReplaySpeed(text: string): string {
  try {
    replaySpeedOf(text);
  } catch {
    throw new InvalidArgumentError(
      `expected recorded, max or a number above 0 (e.g. 10 for ten times faster), got "${text}"`,
    );
  }
  return text;
}

export function addServeCommand(program: Command, { run, setExitCode, env }: CommandContext): void {
  const S = SERVE_OPTIONS;
  program
    .command('serve')
    .description('run the whole Stream Posts service locally, in memory (for testing clients and bots)')
    .option(S.host.flag, S.host.doc, S.host.default)
    .option(S.port.flag, S.port.doc, parsePort, S.port.default)
    .option(S.seed.flag, S.seed.doc)
    .option(S.tlsCert.flag, S.tlsCert.doc)
    .option(S.tlsKey.flag, S.tlsKey.doc)
    .addOption(parsedOption(S.idempotencyWindowMs, parseDuration))
    .addOption(parsedOption(S.uploadWindowMs, parseTimeout))
    .option(S.rateLimit.flag, S.rateLimit.doc, parseNonNegativeInteger, S.rateLimit.default)
    .addOption(new Option(S.keyRateLimit.flag, S.keyRateLimit.doc).argParser(parseNonNegativeInteger))
    .option(
      S.maxConnectionsPerKey.flag,
      S.maxConnectionsPerKey.doc,
      parseNonNegativeInteger,
      S.maxConnectionsPerKey.default,
    )
    .option(S.maxSubscriptions.flag, S.maxSubscriptions.doc, parseNonNegativeInteger, S.maxSubscriptions.default)
    .option(S.maxPendingCommands.flag, S.maxPendingCommands.doc, positiveInteger, S.maxPendingCommands.default)
    .option(S.maxPendingReleases.flag, S.maxPendingReleases.doc, parseNonNegativeInteger, S.maxPendingReleases.default)
    .addOption(parsedOption(S.maxPendingReleaseBytes, parseBytesOrZero))
    .option(S.maxIdempotencyKeys.flag, S.maxIdempotencyKeys.doc, parseNonNegativeInteger, S.maxIdempotencyKeys.default)
    .addOption(parsedOption(S.maxIdempotencyBytes, parseBytesOrZero))
    .addOption(parsedOption(S.maxBufferedBytes, parseBytes))
    .addOption(parsedOption(S.keepAliveMs, parseTimeout))
    .addOption(
      new Option(S.hostedHiddenPosts.flag, S.hostedHiddenPosts.doc)
        .choices(S.hostedHiddenPosts.choices)
        .default(S.hostedHiddenPosts.default),
    )
    .addOption(new Option(S.logFormat.flag, S.logFormat.doc).choices(S.logFormat.choices).default(S.logFormat.default))
    .option(S.quiet.flag, S.quiet.doc, S.quiet.default)
    .option(S.verbose.flag, S.verbose.doc)
    .option(S.admin.flag, S.admin.doc)
    .option(S.noAdmin.flag, S.noAdmin.doc)
    .addOption(new Option(S.adminToken.flag, S.adminToken.doc).env(S.adminToken.env))
    .addOption(new Option(S.allowedHosts.flag, S.allowedHosts.doc).argParser(collectList).env(S.allowedHosts.env))
    .addOption(new Option(S.allowedOrigins.flag, S.allowedOrigins.doc).argParser(collectList).env(S.allowedOrigins.env))
    .addOption(parsedOption(S.bodyTimeoutMs, parseTimeout))
    .addOption(parsedOption(S.headersTimeoutMs, parseTimeout))
    .option(S.store.flag, S.store.doc, S.store.default)
    .option(S.redisPrefix.flag, S.redisPrefix.doc, S.redisPrefix.default)
    .option(S.resetStore.flag, S.resetStore.doc, S.resetStore.default)
    .option(S.allowEviction.flag, S.allowEviction.doc, S.allowEviction.default)
    .option(S.workers.flag, S.workers.doc, positiveInteger, S.workers.default)
    .option(S.state.flag, S.state.doc)
    .option(S.scenario.flag, S.scenario.doc)
    // Its default is shown, not set: --speed without --scenario is refused, so serve must see whether it was given.
    .option(S.speed.flag, `${S.speed.doc} (default: ${shown(S.speed)})`, parseSpeed)
    .option(S.exitAfterScenario.flag, S.exitAfterScenario.doc)
    .addOption(new Option(S.scenarioStart.flag, S.scenarioStart.doc).choices(S.scenarioStart.choices))
    .option(S.record.flag, S.record.doc)
    .option(S.upstream.flag, S.upstream.doc)
    .addOption(parsedOption(S.recordMaxBytes, parseBytes))
    .option(S.recordMaxConnections.flag, S.recordMaxConnections.doc, positiveInteger, S.recordMaxConnections.default)
    .option(S.recordRedact.flag, S.recordRedact.doc, (path: string, paths: string[] = []) => [...paths, path])
    .option(S.trace.flag, S.trace.doc)
    .option(S.exec.flag, S.exec.doc)
    .option(S.replay.flag, S.replay.doc)
    .option(S.replaySpeed.flag, S.replaySpeed.doc, parseReplaySpeed)
    .addOption(new Option(S.replayTimes.flag, S.replayTimes.doc).choices(S.replayTimes.choices))
    .option(S.replayIgnore.flag, S.replayIgnore.doc, collectList)
    .option(S.replayFallback.flag, S.replayFallback.doc)
    .option(S.replayStrict.flag, S.replayStrict.doc)
    .option(S.color.flag, S.color.doc)
    .option(S.json.flag, S.json.doc)
    .action(async (options) => {
      const color = colorWanted(process.stdout, options.color, env);
      const { json, ...rest } = options;
      const logFormat = json === true ? 'json' : options.logFormat;
      setExitCode(await run.serve({ ...rest, logFormat, verbose: options.verbose === true, color }));
    });
}
