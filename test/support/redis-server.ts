import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

/**
 * A redis-server of a test's own on a free port, never the machine's 6379. With
 * `persistent`, every write is on disk (append-only file, fsync always) in a temporary
 * directory, so a restart finds all that was acknowledged.
 */
export class RedisServer {
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly port: number,
    readonly dir: string | undefined,
    readonly password: string | undefined,
    readonly config: readonly string[],
  ) {}

  /** `config`: more `--name value` settings (a `maxmemory-policy`, say). */
  static async start(
    options: { persistent?: boolean; password?: string; config?: readonly string[] } = {},
  ): Promise<RedisServer> {
    const dir = options.persistent ? await mkdtemp(join(tmpdir(), 'stream-posts-redis-')) : undefined;
    const server = new RedisServer(await freePort(), dir, options.password, options.config ?? []);
    await server.#spawn();
    return server;
  }

  get url(): string {
    return `redis://${this.password === undefined ? '' : `:${this.password}@`}127.0.0.1:${this.port}`;
  }

  async #spawn(): Promise<void> {
    const persistence = this.dir
      ? ['--dir', this.dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '']
      : ['--save', '', '--appendonly', 'no'];
    if (this.password !== undefined) persistence.push('--requirepass', this.password);
    persistence.push(...this.config);
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', ...persistence, '--daemonize', 'no'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          child.stdout!.off('data', onData);
          child.stdout!.resume();
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.resume();
      child.once('error', reject);
      child.once('exit', (code) =>
        reject(new Error(`redis-server exited (${code}) before it was ready: ${output.slice(-500)}`)),
      );
    });
  }

  /** Kills the server at once (no shutdown save), as a crash would. */
  async kill(): Promise<void> {
    this.#child?.kill('SIGKILL');
    await this.#exited;
    this.#child = undefined;
  }

  /** Stops the process without closing anything (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void {
    this.#child?.kill('SIGSTOP');
  }

  resume(): void {
    this.#child?.kill('SIGCONT');
  }

  /** Starts it again on the same port (and the same data directory, when persistent). */
  async restart(): Promise<void> {
    if (this.#child) await this.kill();
    await this.#spawn();
  }

  async stop(): Promise<void> {
    await this.kill();
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}
