import ms from 'ms';
import { describeError, request, setToken, takeTokenFromFragment, whenUnauthorized } from './api.js';
import { serviceNow, setServiceNow } from './clock.js';
import { ConnectionsPanel } from './connections.js';
import { renderStreams, renderUsers, type Directory } from './directory.js';
import { byId, h, report } from './dom.js';
import { openFeed, type FeedStatus } from './events.js';
import { FaultsPanel } from './faults.js';
import { Feed, type FeedPost } from './feed.js';
import { PublishForm } from './publish.js';

takeTokenFromFragment();

const STATE_REFRESH_MS = 5_000;

const feed = new Feed(byId('feed'), byId('feed-empty'));
const publish = new PublishForm();
const keysStatus = byId('keys-result');
const clockOutput = byId('clock-result');
const tokenForm = byId<HTMLFormElement>('token-form');
const filter = byId<HTMLSelectElement>('feed-filter');

const refreshLater = throttle(() => void refreshAll(), 250);
const connections = new ConnectionsPanel(refreshLater);
const faults = new FaultsPanel(refreshLater);

whenUnauthorized(() => {
  tokenForm.hidden = false;
});
tokenForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const input = byId<HTMLInputElement>('token-input');
  setToken(input.value.trim());
  input.value = '';
  tokenForm.hidden = true;
  events.retryNow();
  void refreshAll();
});

filter.addEventListener('change', () => feed.setFilter(filter.value));

let shownDirectory = '';

async function refreshDirectory(): Promise<void> {
  const fresh = await request<Directory>('GET', '/_admin/directory');
  // Unchanged: left as it is, so an open menu or a choice being made is not reset.
  if (JSON.stringify(fresh) === shownDirectory) return;
  shownDirectory = JSON.stringify(fresh);
  renderStreams(byId('streams-body'), fresh, keysStatus);
  renderUsers(byId('users-body'), fresh, keysStatus);
  publish.setDirectory(fresh);
  const chosen = filter.value;
  filter.replaceChildren(
    h('option', { value: '' }, 'all streams'),
    ...fresh.streams.map((stream) => h('option', { value: stream.id }, stream.name)),
  );
  filter.value = fresh.streams.some((stream) => stream.id === chosen) ? chosen : '';
}

async function refreshState(): Promise<void> {
  const state = await request<Record<string, unknown> & { now: string }>('GET', '/_admin/state');
  setServiceNow(state.now);
  const counts = byId('counts');
  const shown = ['connections', 'subscriptions', 'posts', 'scheduledReleases', 'idempotencyKeys', 'clockOffsetMs'];
  counts.replaceChildren(
    ...shown.map((name) => h('div', { 'data-count': name }, h('dt', {}, name), h('dd', {}, String(state[name])))),
  );
  if (Array.isArray(state['faults'])) {
    counts.append(
      h('div', { 'data-count': 'faults' }, h('dt', {}, 'faults'), h('dd', {}, String(state['faults'].length))),
    );
  }
}

async function refreshAll(): Promise<void> {
  const results = await Promise.allSettled([
    refreshDirectory(),
    refreshState(),
    connections.refresh(),
    faults.refresh(),
  ]);
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) report(clockOutput, describeError(failed.reason), 'error');
}

async function advance(advanceMs: number): Promise<void> {
  try {
    const reply = await request<{ now: string }>('POST', '/_admin/clock', { advanceMs });
    setServiceNow(reply.now);
    report(clockOutput, `service time is now ${reply.now}`, 'ok');
    showTime();
  } catch (error) {
    report(clockOutput, describeError(error), 'error');
  }
}

for (const button of document.querySelectorAll<HTMLButtonElement>('[data-advance]')) {
  button.addEventListener('click', () => void advance(Number(button.dataset['advance'])));
}
byId<HTMLFormElement>('advance-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = byId<HTMLInputElement>('advance-input').value.trim();
  const amount = ms(text as ms.StringValue);
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount < 0) {
    report(clockOutput, `"${text}" is not a duration such as 90s, 15m, 2h or 3d`, 'error');
    return;
  }
  void advance(Math.round(amount));
});
byId('reset').addEventListener('click', () => {
  request('POST', '/_admin/reset', {}).then(
    () => report(clockOutput, 'reset to the seed', 'ok'),
    (error: unknown) => report(clockOutput, describeError(error), 'error'),
  );
});

const statusText: Record<FeedStatus, string> = {
  connecting: 'connecting…',
  live: 'live',
  down: 'disconnected, retrying',
  unauthorized: 'needs the admin token',
};

const events = openFeed({
  onStatus(status, detail) {
    const element = byId('feed-status');
    element.textContent = statusText[status];
    element.dataset['status'] = status;
    element.title = detail ?? '';
    if (status === 'unauthorized') tokenForm.hidden = false;
    if (status === 'live') void refreshAll();
  },
  onEvent(name, data) {
    const message = data as { now?: string; posts?: FeedPost[]; post?: FeedPost; type?: 'created' | 'released' };
    if (message.now) setServiceNow(message.now);
    if (name === 'snapshot') feed.replace(message.posts ?? []);
    else if (name === 'post' && message.post) feed.add(message.post, message.type ?? 'created');
    // A reset is followed by a snapshot of the seed's posts, which replaces the feed at once.
    showTime();
    refreshLater();
  },
});

function showTime(): void {
  byId('service-time').textContent = new Date(serviceNow()).toISOString().replace(/\.\d+Z$/, 'Z');
  feed.tick();
}
setInterval(showTime, 1000);
// Subscription counts send no event (faults, connections and posts do): they are read again now and then.
setInterval(() => {
  if (document.visibilityState === 'visible' && byId('feed-status').dataset['status'] === 'live') refreshLater();
}, STATE_REFRESH_MS);
showTime();

/** Runs `run` at most once per `ms`, trailing: bursts of events cause one refresh. */
function throttle(run: () => void, everyMs: number): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return () => {
    timer ??= setTimeout(() => {
      timer = undefined;
      run();
    }, everyMs);
  };
}
