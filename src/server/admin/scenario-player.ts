import { ProtocolError } from '../../protocol/errors.js';
import { timerDelay, type AdjustableClock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Scenario, ScenarioFaults, ScenarioStep } from './scenario.js';
import type { StreamPostsService } from '../service/service.js';
import type { PostRecord } from '../stores/store.js';

export interface ScenarioContext {
  service: StreamPostsService;
  /** Settles once a subscription (on any transport) has gone live: a scenario may start then. */
  firstSubscription: Promise<void>;
  clock: AdjustableClock;
  logger: Logger;
  /** Moves the service's clock forward (the admin action: due releases have fired when it resolves). */
  advanceClock(ms: number): Promise<unknown>;
  faults: ScenarioFaults | undefined;
}

export interface PlayOptions {
  /** How many times faster than real time the steps run (default 1). */
  speed?: number;
  /** Nothing runs until `step()`. */
  stepped?: boolean;
  /**
   * When the scenario's time 0 is: at once (`at-start`, the default), or when the first
   * subscription goes live (`first-subscriber`), so a step at 0 s reaches a client that
   * connects after the start.
   */
  start?: ScenarioStart;
}

export type ScenarioStart = 'at-start' | 'first-subscriber';
const SCENARIO_STARTS: readonly ScenarioStart[] = ['at-start', 'first-subscriber'];

/** What one step did. */
export interface StepOutcome {
  index: number;
  at: number;
  kind: ScenarioStep['kind'];
  /** For a publish: the post, or why the service refused it. */
  post?: PostRecord;
  duplicate?: boolean;
  error?: { code: string; message: string };
}

export interface ScenarioSummary {
  steps: number;
  published: number;
  failed: number;
}

/**
 * Plays a scenario against the service: in real time, faster, or a step at a time. Before
 * each step the service's clock is moved up to the step's time after the start (when it is
 * behind, as it is when played faster or stepped), so relative release times, idempotency
 * windows and the order of releases and steps are those of the scenario however it is played.
 */
export class ScenarioPlayer {
  readonly done: Promise<ScenarioSummary>;
  readonly #scenario: Scenario;
  readonly #context: ScenarioContext;
  readonly #speed: number;
  readonly #stepped: boolean;
  readonly #start: ScenarioStart;
  #next = 0;
  #startClock = 0;
  #startWall = 0;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<StepOutcome | undefined> = Promise.resolve(undefined);
  #finish!: (summary: ScenarioSummary) => void;
  #published = 0;
  #failed = 0;
  #stopped = false;

  constructor(scenario: Scenario, context: ScenarioContext, options: PlayOptions = {}) {
    const speed = options.speed ?? 1;
    if (typeof speed !== 'number' || !Number.isFinite(speed) || speed <= 0 || speed > 1_000_000) {
      throw new RangeError(`speed must be a number above 0 and at most 1000000, got ${String(speed)}`);
    }
    const start = options.start ?? 'at-start';
    if (!SCENARIO_STARTS.includes(start)) {
      throw new RangeError(`start must be one of ${SCENARIO_STARTS.join(', ')}, got ${String(start)}`);
    }
    if (start === 'first-subscriber' && options.stepped === true) {
      throw new RangeError(
        'start: first-subscriber does not combine with stepped, whose steps run when step() is called',
      );
    }
    this.#start = start;
    this.#scenario = scenario;
    this.#context = context;
    this.#speed = speed;
    this.#stepped = options.stepped === true;
    this.done = new Promise((resolve) => {
      this.#finish = resolve;
    });
  }

  get stepped(): boolean {
    return this.#stepped;
  }

  /** Every step has run, or it was stopped. */
  get ended(): boolean {
    return this.#stopped;
  }

  /** Steps not run yet. */
  get remaining(): number {
    return this.#scenario.steps.length - this.#next;
  }

  start(): void {
    if (this.#start === 'at-start') return this.#begin();
    this.#context.logger.log('info', 'scenario waits for the first subscription', {
      steps: this.#scenario.steps.length,
    });
    void this.#context.firstSubscription.then(() => {
      if (!this.#stopped) this.#begin();
    });
  }

  #begin(): void {
    this.#startClock = this.#context.clock.now();
    this.#startWall = performance.now();
    this.#context.logger.log('info', 'scenario started', {
      steps: this.#scenario.steps.length,
      ...(this.#stepped ? { stepped: true } : { speed: this.#speed }),
    });
    if (!this.#stepped) this.#arm();
  }

  /** Runs the next step now; undefined when none is left. Steps run one at a time, in order. */
  step(): Promise<StepOutcome | undefined> {
    const run = this.#running.then(() => this.#runNext());
    this.#running = run.catch(() => undefined);
    return run;
  }

  /** Stops playing: no further step runs; `done` resolves with what was played. */
  stop(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#end();
  }

  #arm(): void {
    const step = this.#scenario.steps[this.#next];
    if (!step || this.#stopped) return;
    const due = this.#startWall + step.at / this.#speed;
    const delay = timerDelay(due - performance.now());
    this.#timer = setTimeout(() => {
      if (performance.now() + 1 < due) this.#arm();
      else void this.step().then(() => this.#arm());
    }, delay);
  }

  async #runNext(): Promise<StepOutcome | undefined> {
    const step = this.#scenario.steps[this.#next];
    if (!step || this.#stopped) return undefined;
    this.#next += 1;
    const behind = this.#startClock + step.at - this.#context.clock.now();
    if (behind > 0) await this.#context.advanceClock(Math.ceil(behind));
    const outcome = await this.#run(step);
    if (this.#next === this.#scenario.steps.length) this.#end();
    return outcome;
  }

  async #run(step: ScenarioStep): Promise<StepOutcome> {
    const outcome: StepOutcome = { index: step.index, at: step.at, kind: step.kind };
    const context = this.#context;
    try {
      if (step.kind === 'publish') Object.assign(outcome, await this.#publish(step.publish));
      else if (step.kind === 'advance-clock') await context.advanceClock(step.ms);
      else if (step.kind === 'fault') await context.faults!.applyFault(step.fault);
      else if (step.kind === 'clear-faults') await context.faults!.clearFaults();
      else context.logger.log('info', 'scenario', { step: step.index, message: step.message });
    } catch (error) {
      // A refusal (a cap reached, a fault) or a failure of the injected faults: the scenario goes on.
      const code = error instanceof ProtocolError ? error.code : 'internal';
      outcome.error = { code, message: (error as Error).message };
    }
    if (outcome.error) {
      this.#failed += 1;
      context.logger.log('warn', 'scenario step failed', {
        step: step.index,
        kind: step.kind,
        code: outcome.error.code,
        reason: outcome.error.message,
      });
    }
    return outcome;
  }

  async #publish(publish: Extract<ScenarioStep, { kind: 'publish' }>['publish']): Promise<Partial<StepOutcome>> {
    const stream = this.#context.service.stream(publish.streamId)!;
    const release = publish.releaseAt;
    const releaseAt =
      release === null ? null : 'absolute' in release ? release.absolute : this.#startClock + release.afterStartMs;
    const result = await this.#context.service.publish(
      { userId: stream.owner, kind: 'stream', streamId: stream.id },
      {
        streamId: stream.id,
        content: publish.content,
        contentType: publish.contentType,
        releaseAt: releaseAt === null ? null : new Date(releaseAt).toISOString(),
        customTarget: publish.customTarget,
        idempotencyKey: publish.idempotencyKey,
      },
    );
    if (!result.duplicate) this.#published += 1;
    this.#context.logger.log('info', 'scenario published', {
      stream: stream.id,
      post: result.post.id,
      duplicate: result.duplicate,
      hidden: result.post.hidden,
    });
    return { post: result.post, duplicate: result.duplicate };
  }

  #end(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    const summary = { steps: this.#next, published: this.#published, failed: this.#failed };
    this.#context.logger.log('info', 'scenario ended', { ...summary });
    this.#finish(summary);
  }
}
