// A conformance run: every check against the service, and the same check against an
// in-process `serve` (the hosted dialect, its demo seed), compared side by side.
import { startServer } from '../index.js';
import { CHECKS, Skip, type Check, type Level, type Observation, type Probe } from './checks.js';
import { Exchanges, Unreachable, type Target } from './wire.js';

export type Result = 'ok' | 'warn' | 'error' | 'skipped';

export interface CheckReport {
  id: string;
  level: Level;
  title: string;
  result: Result;
  /** Why it was skipped, or what went wrong running it. */
  reason?: string;
  /** What the service did, where it differs from serve. */
  service?: Observation;
  /** What serve did for the same exchange. */
  serve?: Observation;
  /** The fields that differ. */
  differs?: string[];
}

export interface DoctorOptions {
  target: Omit<Target, 'timeoutMs'>;
  timeoutMs: number;
  /** `--allow-writes --stream ID`: the one stream the run may write to. */
  writeStream?: string | undefined;
  /** Told of each check as it ends (one line a check on screen). */
  onCheck?: (report: CheckReport) => void;
}

export interface DoctorRun {
  checks: CheckReport[];
  /** The service could not be reached at all: the message. */
  unreachable?: string;
  /** What was sent to the service. */
  sent: { frames: number; requests: number; posts: number };
  /** Every exchange with the service, for `--record`. */
  exchanges: Exchanges;
}

/** The fields whose values differ; a field the service's check could not see is not compared. */
function differences(service: Observation, reference: Observation): string[] {
  const fields = new Set([...Object.keys(service), ...Object.keys(reference)]);
  return [...fields].filter(
    (field) => service[field] !== undefined && reference[field] !== undefined && service[field] !== reference[field],
  );
}

const failing = (level: Level): Result => (level === 'MUST' ? 'error' : 'warn');

async function observe(check: Check, probe: Probe): Promise<Observation | Skip> {
  try {
    return await check.run(probe);
  } catch (error) {
    if (error instanceof Skip) return error;
    throw error;
  }
}

/** The in-process `serve` every check is compared with: its demo seed, loopback, silent. */
async function referenceService(timeoutMs: number, writes: boolean) {
  const server = await startServer({ host: '127.0.0.1', port: 0 });
  const streamId = 'macro-wire';
  const apiKey = writes ? server.keys.streams[streamId] : server.keys.readers['alice'];
  // A post still hidden, so the hidden-post check has something to read on serve.
  await fetch(`${server.httpUrl}/v1/streams/${streamId}/post`, {
    method: 'POST',
    headers: { 'x-api-key': server.keys.streams[streamId]!, 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'held back', releaseAt: new Date(Date.now() + 3_600_000).toISOString() }),
  });
  const probe: Probe = {
    target: { wsBase: server.url, httpBase: server.httpUrl, apiKey: apiKey!, timeoutMs },
    log: new Exchanges(),
    writeStream: writes ? streamId : undefined,
  };
  return { server, probe };
}

export async function runDoctor(options: DoctorOptions): Promise<DoctorRun> {
  const writes = options.writeStream !== undefined;
  const exchanges = new Exchanges();
  const service: Probe = {
    target: { ...options.target, timeoutMs: options.timeoutMs },
    log: exchanges,
    writeStream: options.writeStream,
  };
  const reference = await referenceService(options.timeoutMs, writes);
  const run: DoctorRun = { checks: [], sent: { frames: 0, requests: 0, posts: 0 }, exchanges };
  try {
    for (const check of CHECKS) {
      const base = { id: check.id, level: check.level, title: check.title };
      let report: CheckReport;
      if (check.writes && !writes) {
        report = { ...base, result: 'skipped', reason: 'writes to the service: needs --allow-writes --stream ID' };
      } else {
        // The two runs of a check go side by side: neither service sees the other's traffic.
        const expecting = observe(check, reference.probe);
        let seen: Observation | Skip;
        try {
          seen = await observe(check, service);
        } catch (error) {
          if (!(error instanceof Unreachable)) throw error;
          // Nothing answered: the first check says so for the whole run; a later one fails alone.
          if (run.checks.length === 0) {
            run.unreachable = error.message;
            await expecting.catch(() => undefined);
            break;
          }
          seen = { reachable: false };
        }
        const expected = await expecting;
        if (seen instanceof Skip) report = { ...base, result: 'skipped', reason: seen.message };
        else if (expected instanceof Skip)
          report = { ...base, result: 'skipped', reason: `serve: ${expected.message}` };
        else {
          const differs = differences(seen, expected);
          report =
            differs.length === 0
              ? { ...base, result: 'ok' }
              : { ...base, result: failing(check.level), service: seen, serve: expected, differs };
        }
      }
      run.checks.push(report);
      options.onCheck?.(report);
    }
  } finally {
    await reference.server.close();
  }
  run.sent = { frames: exchanges.framesSent, requests: exchanges.requestsSent, posts: exchanges.postsWritten };
  return run;
}
