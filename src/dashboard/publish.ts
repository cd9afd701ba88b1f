import ms from 'ms';
import { describeError, request } from './api.js';
import { serviceNow } from './clock.js';
import type { Directory } from './directory.js';
import { byId, h, report } from './dom.js';
import type { FeedPost } from './feed.js';

/** `+10m`, `+2h`, `+1d` from the service's now, or a date-time passed on for the service to check. */
export function resolveReleaseAt(text: string): string | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  if (!trimmed.startsWith('+')) return trimmed;
  const offset = ms(trimmed.slice(1) as ms.StringValue);
  if (typeof offset !== 'number' || !Number.isFinite(offset) || offset < 0) {
    throw new Error(`release time "${trimmed}" is not a duration such as +10m, +2h or +1d`);
  }
  return new Date(serviceNow() + offset).toISOString();
}

/** The publish form: posts through the REST endpoint with the stream's key, as a bot would. */
export class PublishForm {
  #directory: Directory = { streams: [], users: [] };
  readonly #form = byId<HTMLFormElement>('publish-form');
  readonly #stream = byId<HTMLSelectElement>('publish-stream');
  readonly #targets = byId<HTMLDataListElement>('publish-targets');
  readonly #output = byId<HTMLElement>('publish-result');

  constructor() {
    this.#stream.addEventListener('change', () => this.#showTargets());
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#submit();
    });
  }

  setDirectory(directory: Directory): void {
    this.#directory = directory;
    const chosen = this.#stream.value;
    this.#stream.replaceChildren(
      ...directory.streams.map((stream) => h('option', { value: stream.id }, `${stream.name} (${stream.id})`)),
    );
    if (directory.streams.some((stream) => stream.id === chosen)) this.#stream.value = chosen;
    this.#showTargets();
  }

  #showTargets(): void {
    const stream = this.#directory.streams.find((candidate) => candidate.id === this.#stream.value);
    this.#targets.replaceChildren(...(stream?.customTargets ?? []).map((target) => h('option', { value: target })));
  }

  async #submit(): Promise<void> {
    const fields = new FormData(this.#form);
    const value = (name: string) => String(fields.get(name) ?? '');
    const stream = this.#directory.streams.find((candidate) => candidate.id === value('streamId'));
    if (!stream) {
      report(this.#output, 'choose a stream', 'error');
      return;
    }
    let releaseAt: string | null;
    try {
      releaseAt = resolveReleaseAt(value('releaseAt'));
    } catch (error) {
      report(this.#output, describeError(error), 'error');
      return;
    }
    const body: Record<string, unknown> = { content: value('content'), contentType: value('contentType') };
    if (releaseAt !== null) body['releaseAt'] = releaseAt;
    if (value('customTarget').trim() !== '') body['customTarget'] = value('customTarget').trim();
    if (value('idempotencyKey') !== '') body['idempotencyKey'] = value('idempotencyKey');
    report(this.#output, 'publishing…', 'info');
    try {
      const reply = await request<{ post: FeedPost; duplicate?: boolean }>(
        'POST',
        `/v1/streams/${encodeURIComponent(stream.id)}/post`,
        body,
        { 'x-api-key': stream.key },
      );
      const { post } = reply;
      const hidden = post.hidden && post.releaseAt !== null ? `, hidden until ${post.releaseAt}` : '';
      report(this.#output, `${reply.duplicate ? 'duplicate of' : 'published'} ${post.id}${hidden}`, 'ok');
    } catch (error) {
      report(this.#output, describeError(error), 'error');
    }
  }
}
