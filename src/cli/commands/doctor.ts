import { doctorRecording, saveRecording, SecretLeft } from '../../doctor/recording.js';
import { runDoctor, type CheckReport, type Result } from '../../doctor/run.js';
import { jsonLine } from '../../render/json.js';
import { createChalk } from '../../render/style.js';
import { safeLine } from '../../render/text.js';
import type { CommandIo } from '../command-io.js';
import { requireKey, type CommonOptions } from '../common.js';
import { EXIT, ExitError } from '../exit.js';

export interface DoctorOptions extends CommonOptions {
  /** `--allow-writes --stream ID`: the stream the write checks post to; undefined: no writes. */
  writeStream: string | undefined;
  /** `--record FILE`. */
  record: string | undefined;
}

const MARK: Record<Result, string> = { ok: 'ok', warn: 'warn', error: 'error', skipped: 'skip' };

/** `field=value` pairs of an observation, for the side-by-side line. */
const shown = (fields: readonly string[], observation: CheckReport['service']) =>
  fields.map((field) => `${field}=${String(observation?.[field])}`).join(' ');

function line(report: CheckReport, color: boolean): string {
  const chalk = createChalk(color);
  const paint = { ok: chalk.green, warn: chalk.yellow, error: chalk.red, skipped: chalk.dim }[report.result];
  const head = `${paint(MARK[report.result].padEnd(5))} ${report.level.padEnd(6)} ${report.id.padEnd(18)} ${report.title}`;
  if (report.differs) {
    return `${head}\n${' '.repeat(13)}the service: ${safeLine(shown(report.differs, report.service))}; serve: ${shown(report.differs, report.serve)}`;
  }
  return report.reason === undefined ? head : `${head}\n${' '.repeat(13)}${chalk.dim(safeLine(report.reason))}`;
}

/** `doctor`: every check against the service and against an in-process serve, one line a check. */
export async function doctor(options: DoctorOptions, { streams }: CommandIo): Promise<number> {
  const apiKey = requireKey(options.settings);
  const { httpBase } = options.settings.endpoint;
  const out = streams.stdout;
  const run = await runDoctor({
    target: { wsBase: httpBase.replace(/^http/, 'ws'), httpBase, apiKey },
    timeoutMs: options.timeoutMs,
    writeStream: options.writeStream,
    onCheck: (report) =>
      out.write(options.json ? `${jsonLine({ kind: 'check', ...report })}\n` : `${line(report, options.color)}\n`),
  });
  if (run.unreachable !== undefined)
    throw new ExitError(EXIT.unreachable, `cannot connect to ${httpBase}: ${safeLine(run.unreachable)}`);
  const counts = { ok: 0, warn: 0, error: 0, skipped: 0 };
  for (const report of run.checks) counts[report.result] += 1;
  const summary = { kind: 'summary', url: httpBase, ...counts, sent: run.sent };
  if (options.json) out.write(`${jsonLine(summary)}\n`);
  else
    out.write(
      `\n${run.checks.length} checks against ${httpBase}: ${counts.ok} ok, ${counts.warn} warn, ${counts.error} error, ${counts.skipped} skipped; sent ${run.sent.frames} frames and ${run.sent.requests} requests, wrote ${run.sent.posts} posts\n`,
    );
  if (options.record !== undefined) {
    const dialect = run.checks.find((report) => report.id === 'hello')?.result === 'ok' ? 'stream-posts' : 'hosted';
    try {
      await saveRecording(
        options.record,
        doctorRecording(run.exchanges, httpBase.replace(/^http/, 'ws'), apiKey, dialect),
        [apiKey],
      );
    } catch (error) {
      if (error instanceof SecretLeft) throw new ExitError(EXIT.failed, `--record: ${error.message}`);
      throw error;
    }
    if (!options.quiet) streams.stderr.write(`stream-posts: the run's exchanges are in ${options.record}\n`);
  }
  return run.checks.some((report) => report.level === 'MUST' && report.result === 'error') ? EXIT.failed : EXIT.ok;
}
