import { spawn } from 'node:child_process';
import { fstatSync } from 'node:fs';

/** How often the watcher also checks that this process is still there (tail's `-s`). */
const CHECK_SECONDS = '0.2';

/**
 * Calls `onGone` once nobody reads the pipe on `fd` any more (`listen | head -2` after head
 * has its lines), without writing to it. A pipe whose reader closed raises POLLERR on its
 * write end, which Node never watches for: the loss shows only at the next write, which may
 * be a post an hour away. GNU tail does watch for it (`tail -f` ends as soon as its reader
 * goes, which is the behaviour wanted here), so a `tail -f /dev/null` that writes nothing
 * holds the same pipe for us and dies of SIGPIPE when the reader goes; `--pid` ends it when
 * this process ends, even killed. Where there is no GNU tail (another tail refuses `--pid`),
 * nothing changes: the next write's EPIPE still ends the command.
 *
 * Why a child process and not this one (measured on Linux 6.18, Node 20): libuv will not
 * read from a write-only descriptor (`readStart` on fd 1 gives ENOTCONN), and opening
 * `/proc/self/fd/1` again succeeds after the reader has gone (the kernel refuses only named
 * pipes). What does see the hang-up in-process is WASI's `poll_oneoff`, which blocks, so it
 * needs a worker thread polling in rounds: +13 MiB of memory per command against tail's
 * 1.9 MiB, on an experimental API. The child stays, on Linux only.
 *
 * It reads process.pid and process.platform: the watcher is tied to this very process. A
 * stream without a descriptor (a test's, in memory) is not watched.
 *
 * Returns the function that stops watching.
 */
export function watchPipeReader(fd: number | undefined, onGone: () => void): () => void {
  if (fd === undefined || process.platform === 'win32' || !isPipe(fd)) return () => {};
  const watcher = spawn('tail', ['-s', CHECK_SECONDS, '-f', '/dev/null', `--pid=${process.pid}`], {
    stdio: ['ignore', fd, 'ignore'],
  });
  let stopped = false;
  watcher.on('error', () => {});
  watcher.on('exit', (_code, signal) => {
    if (!stopped && signal === 'SIGPIPE') onGone();
  });
  // The watcher must not keep this process alive, nor hold its stdout open after it.
  watcher.unref();
  return () => {
    stopped = true;
    if (watcher.exitCode === null && watcher.signalCode === null) watcher.kill();
  };
}

function isPipe(fd: number): boolean {
  try {
    return fstatSync(fd).isFIFO();
  } catch {
    return false;
  }
}
