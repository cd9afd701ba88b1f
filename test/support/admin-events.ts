import { Arrivals } from './arrivals.js';
import { afterTest } from './harness.js';

/** The dashboard's events feed read as a program would: each `event:` with its parsed `data:`. */
export async function openEvents(httpUrl: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await fetch(`${httpUrl}/_admin/events`, { headers, signal: controller.signal });
  afterTest(() => controller.abort());
  const events: { name: string; data: any }[] = [];
  const arrivals = new Arrivals();
  /** Per event name, how many have been taken. */
  const taken = new Map<string, number>();
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const name = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (name !== undefined && data !== undefined) events.push({ name, data: JSON.parse(data) });
          arrivals.notify();
        }
      }
    } catch {
      // Aborted after the test.
    }
  })();
  /** The next event with this name. */
  async function next(name: string) {
    let found: { name: string; data: any } | undefined;
    await arrivals.until(
      () => {
        const named = events.filter((event) => event.name === name);
        found = named[taken.get(name) ?? 0];
        if (found) taken.set(name, (taken.get(name) ?? 0) + 1);
        return found !== undefined;
      },
      10_000,
      () => new Error(`no more ${name} events; got ${JSON.stringify(events)}`),
    );
    return found!;
  }
  return { response, next };
}
