/**
 * bench/terminal — the full-screen `terminal` driven in tmux, as a person uses it, against
 * baselines taken in the same run and the same tmux:
 *
 * - Key latency: from a key sent (`j`, `/` then a letter, `Enter`) to the pane writing the
 *   change, with 5,000 posts buffered while 200 posts/s arrive, against `less` paging a
 *   file of the same rows (`j`). tmux's control mode (`tmux -C`) reports each write of a
 *   pane as a `%output` line the moment it happens. The view is paused (space) while keys
 *   are timed, so what a key's frame must show (the cursor on the next row, the typed
 *   search, the detail pane) is its own and not a post's: posts still arrive and are
 *   counted in the header, at most 30 frames a second.
 * - Burst: 5,000 posts published as fast as the service takes them: time from the last
 *   acknowledgement to the newest post on the screen, frames a second during the burst,
 *   and CPU time against `tree` printing the same burst in another pane.
 * - Memory: RSS with 5,000 posts buffered, beside `tree`'s after the same posts.
 * - Idle: CPU over IDLE_MS with 5,000 posts buffered and none arriving, as a share of one
 *   core: the once-a-second redraw (the clock, the ages of the rows on screen) and nothing else.
 * - Start: from the command to its first full frame with `--last 20`, against `tree --last
 *   20` printing its first post, started side by side in the same tmux.
 *
 * `terminal-pinned` (bench/terminal-pinned.mjs) runs the keys and the burst again with the
 * render path alone on a core: the terminal and `less` on the last CPU (`taskset`), and this
 * process, the server, the publisher, tmux and `tree` on the others, so what is timed is the
 * terminal's own work and not the server's or tmux's beside it.
 *
 * Flags (through bench/run.mjs): --keys (timed presses of each key, default 60),
 * --posts (the buffer filled before, and the burst, default 5000), --rate (posts/s during
 * the key presses, default 200), --starts (start-up rounds, default 5), --profile[=DIR] (the
 * terminal writes a V8 CPU profile into DIR when it quits; read it with
 * bench/profile-summary.mjs).
 */
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus as cpuList, tmpdir } from 'node:os';
import { join } from 'node:path';
import { profileArgs, readFlags } from './lib/config.mjs';
import { CLI, cpuTimeMs, rssMiB, startStreamPosts } from './lib/processes.mjs';
import { openPublisher } from './lib/publisher.mjs';
import { comparison, median, percentile, round } from './lib/stats.mjs';

const DEFAULTS = { keys: 60, posts: 5000, rate: 200, starts: 5 };
const READER = 'sp_demo_reader_alice';
const STREAM_KEY = 'sp_demo_stream_macro_wire';
const WAIT_MS = 30_000;
/** Long enough for the CPU clock's ticks (10 ms) to measure a tenth of a percent. */
const IDLE_MS = 10_000;
/** A quiet spell: longer than the terminal's wait after subscribing before it loads the markdown renderer. */
const SETTLE_MS = 1_500;

/**
 * `%output` data is the pane's bytes with control bytes and `\` as octal escapes. Kept as
 * bytes (one latin1 character each): a character split over two lines stays whole, and
 * what is looked for is turned into the same bytes (`bytes`).
 */
function decodeOutput(text) {
  return text.replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** Text as the byte string decodeOutput gives. */
const bytes = (text) => Buffer.from(text, 'utf8').toString('latin1');

/** A tmux server of our own, and a control-mode client reporting what each pane writes. */
class ControlledTmux {
  socket = `terminal-bench-${randomBytes(5).toString('hex')}`;
  /** Pane id → everything written since `mark`. */
  written = new Map();
  frames = new Map();
  #waiters = new Set();

  async start() {
    this.tmux('-f', '/dev/null', 'new-session', '-d', '-s', 'bench', '-x', '120', '-y', '40', 'cat');
    this.client = spawn('tmux', ['-u', '-L', this.socket, '-C', 'attach', '-t', 'bench'], {
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    // A control client has no terminal: its size, and so every window's, is given.
    this.client.stdin.write('refresh-client -C 120x40\n');
    this.client.stdout.setEncoding('latin1');
    let rest = '';
    this.client.stdout.on('data', (chunk) => {
      const at = performance.now();
      rest += chunk;
      const lines = rest.split('\n');
      rest = lines.pop();
      for (const line of lines) {
        const match = /^%output (%\d+) (.*)$/.exec(line);
        if (!match) continue;
        const data = decodeOutput(match[2]);
        this.written.set(match[1], (this.written.get(match[1]) ?? '') + data);
        for (const waiter of this.#waiters) waiter(match[1], at);
      }
    });
  }

  tmux(...args) {
    return execFileSync('tmux', ['-u', '-L', this.socket, ...args], { encoding: 'utf8' });
  }

  /** A new window running `command`; returns its pane id and the process's pid (the command is exec'd). */
  window(command) {
    const pane = this.tmux('new-window', '-d', '-P', '-F', '#{pane_id}', `exec ${command}`).trim();
    const pid = Number(this.tmux('display-message', '-p', '-t', pane, '#{pane_pid}').trim());
    return { pane, pid };
  }

  /** Forgets what a pane wrote so far: the next wait looks only at what comes after. */
  mark(pane) {
    this.written.set(pane, '');
  }

  /** Resolves with the time (performance.now) at which the pane's output since `mark` satisfied `check`. */
  until(pane, check, what) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`${pane} never wrote ${what}`));
      }, WAIT_MS);
      const waiter = (from, at) => {
        if (from !== pane || !check(this.written.get(pane) ?? '')) return;
        clearTimeout(timer);
        this.#waiters.delete(waiter);
        resolve(at);
      };
      this.#waiters.add(waiter);
      waiter(pane, performance.now());
    });
  }

  /** Sends keys through the control client and returns when they were sent. */
  keys(pane, ...keys) {
    const sent = performance.now();
    this.client.stdin.write(`send-keys -t ${pane} ${keys.join(' ')}\n`);
    return sent;
  }

  stop() {
    this.client?.kill();
    try {
      this.tmux('kill-server');
    } catch {
      // Already gone.
    }
    // tmux 3.3 leaves the socket file of a server it was told to kill.
    rmSync(join(process.env.TMUX_TMPDIR ?? tmpdir(), `tmux-${process.getuid?.() ?? 0}`, this.socket), { force: true });
  }
}

/** Publishes `count` posts, `window` in flight, optionally at `rate` a second; resolves at the last ack. */
async function publish(ws, count, { label, rate, window = 256 }) {
  let sent = 0;
  let acked = 0;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const pump = () => {
      while (sent < count && sent - acked < window) {
        if (rate !== undefined && sent >= ((performance.now() - started) / 1000) * rate) {
          setTimeout(pump, 5);
          return;
        }
        sent += 1;
        ws.send(
          JSON.stringify({
            event: 'add-stream-post',
            requestId: `${label}-${sent}`,
            data: { streamId: 'macro-wire', content: `${label} post ${sent} of the run`, contentType: 'rawtext' },
          }),
        );
      }
    };
    const onMessage = (data) => {
      const text = data.toString('utf8');
      if (!text.includes(`"requestId":"${label}-`)) return;
      if (!text.includes('"event":"ack"')) {
        ws.off('message', onMessage);
        reject(new Error(`publish refused: ${text.slice(0, 300)}`));
        return;
      }
      acked += 1;
      if (acked === count) {
        ws.off('message', onMessage);
        resolve(performance.now());
      } else pump();
    };
    ws.on('message', onMessage);
    pump();
  });
}

/** Each frame the terminal writes begins synchronized output (DEC mode 2026), and only the lines that changed. */
const FRAME_BEGIN = '\u001B[?2026h';
const FRAME_END = '\u001B[?2026l';

/** Resolves once the process has used no CPU over SETTLE_MS, SETTLE_MS at least after the call. */
async function settled(pid) {
  const deadline = performance.now() + WAIT_MS;
  let before = cpuTimeMs(pid);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const now = cpuTimeMs(pid);
    if (now === before) return;
    if (performance.now() > deadline) throw new Error(`process ${pid} never settled`);
    before = now;
  }
}

/** Resolves when the process is gone (its /proc entry removed). */
async function waitForExit(pid) {
  const deadline = performance.now() + WAIT_MS;
  while (cpuTimeMs(pid) !== undefined) {
    if (performance.now() > deadline) throw new Error(`process ${pid} did not quit`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const summary = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round(median(sorted)), p99: round(percentile(sorted, 99)) };
};

/**
 * With `pinned`, this process (and so the server and tmux it starts, which inherit it) keeps
 * to every CPU but the last, and `onRenderCore` puts a command on the last one; the returned
 * function gives this process its CPUs back.
 */
function pinCores(pinned) {
  const cpus = cpuList().length;
  if (!pinned) return { onRenderCore: (command) => command, release: () => {} };
  if (cpus < 2) throw new Error(`terminal-pinned needs two CPUs or more; this machine has ${cpus}`);
  const taskset = (list) => execFileSync('taskset', ['-a', '-p', '-c', list, String(process.pid)], { stdio: 'ignore' });
  taskset(`0-${cpus - 2}`);
  return { onRenderCore: (command) => `taskset -c ${cpus - 1} ${command}`, release: () => taskset(`0-${cpus - 1}`) };
}

export async function run(options = {}) {
  const config = readFlags(options.flags, DEFAULTS, { whole: true, profile: true });
  const pinned = options.pinned === true;
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const cores = pinCores(pinned);
  const dir = await mkdtemp(join(tmpdir(), 'stream-posts-bench-terminal-'));
  const server = await startStreamPosts(['--rate-limit', '0', '--key-rate-limit', '0']);
  const tmux = new ControlledTmux();
  const env = `env NO_COLOR=1 TERM=xterm-256color XDG_CONFIG_HOME=${dir} STREAM_POSTS_API_KEY=${READER}`;
  const client = (args, nodeArgs = []) =>
    `${env} ${[process.execPath, ...nodeArgs].join(' ')} ${CLI} ${args} --url ${server.url}`;
  try {
    await tmux.start();
    const publisher = await openPublisher(`${server.url}/v1/ws`, { 'x-api-key': STREAM_KEY });

    // Start: both commands side by side, each to its first full screen of posts.
    const starts = { terminal: [], tree: [] };
    // Pinned, only the keys and the burst are timed: the render path's own work.
    for (let round = 0; round < (pinned ? 0 : config.starts); round++) {
      for (const [name, command, done] of [
        [
          'terminal',
          client('terminal --last 20'),
          (text) => text.includes(bytes('● connected')) && text.includes('Whale Alerts'),
        ],
        ['tree', client('tree --last 20 -q'), (text) => text.includes('Whale Alerts')],
      ]) {
        const began = performance.now();
        const { pane } = tmux.window(command);
        tmux.mark(pane);
        const at = await tmux.until(pane, done, `${name}'s first posts`);
        starts[name].push(at - began);
        tmux.tmux('kill-pane', '-t', pane);
      }
    }
    const start = { terminal: round(median(starts.terminal)), tree: round(median(starts.tree)) };
    if (!pinned) {
      log(
        `  start to first full frame: terminal ${start.terminal} ms, tree ${start.tree} ms (medians of ${config.starts})`,
      );
    }

    // The views that hold the buffer, and tree beside them.
    const view = tmux.window(
      cores.onRenderCore(client(`terminal --last 0 --buffer ${config.posts}`, profileArgs(config, 'terminal'))),
    );
    const tree = tmux.window(client('tree --last 0 -q'));
    tmux.mark(view.pane);
    await tmux.until(view.pane, (text) => text.includes(bytes('● connected')), 'connected');
    // The terminal loads its markdown renderer (for the detail pane) once the feed is quiet
    // after the start: the burst is timed after that, so its CPU is the burst's own.
    await settled(view.pid);

    // Burst: the whole buffer in one go.
    const cpuBefore = { view: cpuTimeMs(view.pid), tree: cpuTimeMs(tree.pid) };
    tmux.mark(view.pane);
    tmux.mark(tree.pane);
    const burstStart = performance.now();
    const lastAck = await publish(publisher, config.posts, { label: 'burst' });
    const newest = `burst post ${config.posts} of`;
    const shownAt = await tmux.until(view.pane, (text) => text.includes(newest), 'the newest post');
    await tmux.until(tree.pane, (text) => text.includes(newest), 'the newest post in tree');
    const burstFrames = tmux.written.get(view.pane).split(FRAME_BEGIN).length - 1;
    const burstSeconds = (shownAt - burstStart) / 1000;
    // Both have taken the posts in; the CPU they spend settling is part of the burst.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const cpu = { view: cpuTimeMs(view.pid) - cpuBefore.view, tree: cpuTimeMs(tree.pid) - cpuBefore.tree };
    const rss = { view: rssMiB(view.pid), tree: rssMiB(tree.pid) };
    const burst = {
      seconds: round(burstSeconds),
      newestAfterMs: round(shownAt - lastAck),
      // Frames a second as the gaps between them: N frames at the cap span N - 1 gaps, and a
      // burst shorter than a second (0.35 s here) made N / seconds read 31 at exactly 30.
      framesPerSecond: round(Math.max(0, burstFrames - 1) / burstSeconds),
    };
    let idlePercent = null;
    if (!pinned) {
      const idleCpuBefore = cpuTimeMs(view.pid);
      const idleStart = performance.now();
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      idlePercent = round((100 * (cpuTimeMs(view.pid) - idleCpuBefore)) / (performance.now() - idleStart));
      log(`  idle with ${config.posts} posts: ${idlePercent}% of a core over ${IDLE_MS / 1000} s`);
    }
    log(
      `  burst of ${config.posts} in ${round((lastAck - burstStart) / 1000)} s: newest on screen ${burst.newestAfterMs} ms after the last ack; ${burst.framesPerSecond} frames/s; CPU terminal ${cpu.view} ms, tree ${cpu.tree} ms; RSS terminal ${rss.view} MiB, tree ${rss.tree} MiB`,
    );

    // less, paging the same rows.
    const rows = join(dir, 'rows.txt');
    await writeFile(
      rows,
      Array.from(
        { length: config.posts },
        (_, index) => `12:00:00 Macro Wire        burst post ${config.posts - index} of the run`,
      ).join('\n'),
    );
    const less = tmux.window(cores.onRenderCore(`less ${rows}`));
    tmux.mark(less.pane);
    await tmux.until(less.pane, (text) => text.includes('burst post'), 'less');

    // Keys, while posts keep arriving (into the paused view: its rows stay where the keys put them).
    tmux.mark(view.pane);
    tmux.keys(view.pane, 'Space');
    await tmux.until(view.pane, (text) => text.includes('PAUSED'), 'paused');
    const trickle = publish(publisher, Math.ceil(((config.keys * 4 + 50) / 20) * config.rate), {
      label: 'live',
      rate: config.rate,
    });
    trickle.catch(() => {});
    const times = { j: [], search: [], enter: [], less: [] };
    for (let press = 0; press < config.keys; press++) {
      // j then k: the cursor between the first two rows, each frame showing where it went.
      const target = press % 2 === 0 ? `burst post ${config.posts - 1} of` : `burst post ${config.posts} of`;
      tmux.mark(view.pane);
      let sent = tmux.keys(view.pane, press % 2 === 0 ? 'j' : 'k');
      times.j.push(
        (await tmux.until(view.pane, (text) => new RegExp(`${bytes('›')}[^\\n]*${target}`).test(text), 'the cursor')) -
          sent,
      );

      tmux.keys(view.pane, '/');
      await tmux.until(view.pane, (text) => text.includes(bytes('/▏')), 'the search prompt');
      tmux.mark(view.pane);
      sent = tmux.keys(view.pane, 'b');
      times.search.push(
        (await tmux.until(view.pane, (text) => text.includes(bytes('/b▏')), 'the typed search')) - sent,
      );
      tmux.mark(view.pane);
      tmux.keys(view.pane, 'Escape', 'Escape');
      await tmux.until(view.pane, (text) => text.includes('j/k move'), 'the search cleared');

      tmux.mark(view.pane);
      sent = tmux.keys(view.pane, 'Enter');
      times.enter.push((await tmux.until(view.pane, (text) => text.includes(bytes('────')), 'the detail pane')) - sent);
      tmux.mark(view.pane);
      tmux.keys(view.pane, 'Enter');
      // Closed: the list's rows drawn again where the pane was, in a whole frame without its rule
      // (one begun after the mark: tmux may report the header's next frame in the same line).
      await tmux.until(
        view.pane,
        (text) =>
          text
            .split(FRAME_BEGIN)
            .slice(1)
            .some(
              (frame) => frame.includes(FRAME_END) && frame.includes('burst post') && !frame.includes(bytes('────')),
            ),
        'the detail pane closed',
      );

      tmux.mark(less.pane);
      sent = tmux.keys(less.pane, press % 2 === 0 ? 'j' : 'k');
      times.less.push((await tmux.until(less.pane, (text) => text.length > 0, 'less')) - sent);
    }
    publisher.close();
    const keys = Object.fromEntries(Object.entries(times).map(([name, values]) => [name, summary(values)]));
    log(
      `  keys (p50/p99 ms): j ${keys.j.p50}/${keys.j.p99}, / then a letter ${keys.search.p50}/${keys.search.p99}, Enter ${keys.enter.p50}/${keys.enter.p99}; less j ${keys.less.p50}/${keys.less.p99}`,
    );

    const lessBaseline = 'less, j';
    const keyFigure = (label, key, percentileName) =>
      comparison(
        lessBaseline,
        `key latency, ${label}, ${percentileName}`,
        'ms',
        key[percentileName],
        keys.less[percentileName],
        {
          target: percentileName === 'p99' ? '<= 2x less and <= 16 ms' : '<= 2x less',
          met:
            key[percentileName] <= 2 * keys.less[percentileName] &&
            (percentileName !== 'p99' || key[percentileName] <= 16),
        },
      );
    if (config.profile) {
      // The profile is written as the terminal quits.
      tmux.keys(view.pane, 'q');
      await waitForExit(view.pid);
      log(`  the terminal's CPU profile is in ${config.profile}`);
    }
    const figures = [
      ...['p50', 'p99'].flatMap((p) => [
        keyFigure('j', keys.j, p),
        keyFigure('/ then a letter', keys.search, p),
        keyFigure('Enter (detail pane)', keys.enter, p),
      ]),
      comparison(
        '—',
        `burst of ${config.posts}: newest post on screen after the last ack`,
        'ms',
        burst.newestAfterMs,
        null,
        {
          target: '<= 250 ms',
          met: burst.newestAfterMs <= 250,
        },
      ),
      comparison('—', `burst of ${config.posts}: frames a second`, 'frames/s', burst.framesPerSecond, null, {
        target: '<= 30',
        met: burst.framesPerSecond <= 30,
      }),
      comparison('tree, the same burst', `burst of ${config.posts}: CPU time`, 'ms', cpu.view, cpu.tree, {
        target: 'ratio <= 1.5',
        met: cpu.view <= 1.5 * cpu.tree,
      }),
      comparison('tree after the same posts', `RSS with ${config.posts} posts buffered`, 'MiB', rss.view, rss.tree, {
        target: '<= 150 MiB',
        met: rss.view <= 150,
      }),
    ];
    if (!pinned) {
      figures.push(
        comparison('—', `idle with ${config.posts} posts: CPU`, '% of a core', idlePercent, null, {
          target: '< 1',
          met: idlePercent < 1,
        }),
        comparison(
          'tree --last 20, first post',
          'start to first full frame, --last 20, median',
          'ms',
          start.terminal,
          start.tree,
          {
            target: 'ratio <= 1.5',
            met: start.terminal <= 1.5 * start.tree,
          },
        ),
      );
    }
    return {
      name: pinned ? 'terminal-pinned' : 'terminal',
      figures,
      notes: [
        `tmux ${execFileSync('tmux', ['-V'], { encoding: 'utf8' })
          .trim()
          .replace(
            /^tmux /,
            '',
          )}, 120x40 panes, NO_COLOR;${pinned ? ` the terminal and less alone on CPU ${cpuList().length - 1}, the rest on the others;` : ''} keys timed from send-keys on the control client to the %output line showing their effect; ${config.keys} presses of each; ${config.rate} posts/s arriving meanwhile into a paused view holding ${config.posts}`,
      ],
      details: { starts, burst, cpu, rss, idlePercent, keys },
    };
  } finally {
    tmux.stop();
    await server.stop();
    cores.release();
    await rm(dir, { recursive: true, force: true });
  }
}
