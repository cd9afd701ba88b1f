import { authHeaders } from './api.js';

export type FeedStatus = 'connecting' | 'live' | 'down' | 'unauthorized';

export interface FeedHandlers {
  onEvent(name: string, data: unknown): void;
  onStatus(status: FeedStatus, detail?: string): void;
}

const FIRST_RETRY_MS = 500;
const LAST_RETRY_MS = 5_000;

/**
 * Reads `/_admin/events` (server-sent events) over fetch, so the admin token goes in a
 * header, and reconnects for as long as the page is open: `serve` restarting only pauses
 * the feed. `retryNow` cuts a wait short (after a token was typed).
 */
export function openFeed(handlers: FeedHandlers): { retryNow(): void } {
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  async function readOnce(): Promise<boolean> {
    handlers.onStatus('connecting');
    const response = await fetch('/_admin/events', { headers: authHeaders(), cache: 'no-store' });
    if (response.status === 401) {
      handlers.onStatus('unauthorized');
      return false;
    }
    if (!response.ok || !response.body) throw new Error(`the events feed answered ${response.status}`);
    handlers.onStatus('live');
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  function dispatch(block: string): void {
    let name = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) name = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length === 0) return;
    handlers.onEvent(name, JSON.parse(data.join('\n')));
  }

  void (async () => {
    let retryMs = FIRST_RETRY_MS;
    for (;;) {
      let wasLive = false;
      try {
        wasLive = await readOnce();
      } catch (error) {
        handlers.onStatus('down', error instanceof Error ? error.message : String(error));
      }
      if (wasLive) {
        retryMs = FIRST_RETRY_MS;
        handlers.onStatus('down', 'serve closed the feed');
      }
      // Jittered: several pages open on one serve do not all come back in the same instant.
      await pause(retryMs * (0.5 + Math.random() / 2));
      retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
    }
  })();

  return { retryNow: () => wake?.() };
}
