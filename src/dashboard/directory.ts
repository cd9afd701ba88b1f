import { h, report } from './dom.js';

export interface DirectoryStream {
  id: string;
  name: string;
  owner: string;
  key: string;
  custom: boolean;
  customTargets: string[];
  subscribers: number;
}

export interface DirectoryUser {
  id: string;
  name: string;
  readerKey: string;
  follows: string[];
  customTargets: Record<string, string[]>;
}

export interface Directory {
  streams: DirectoryStream[];
  users: DirectoryUser[];
}

/** A key as dots and its last characters, with a button that copies the whole key. */
function maskedKey(key: string, label: string, status: HTMLElement): HTMLElement {
  const button = h('button', { type: 'button', class: 'copy', 'aria-label': `copy ${label}` }, 'copy');
  button.addEventListener('click', () => {
    navigator.clipboard.writeText(key).then(
      () => report(status, `copied ${label}`, 'ok'),
      () => report(status, `could not copy ${label}: the browser refused clipboard access`, 'error'),
    );
  });
  return h('span', { class: 'key' }, h('code', {}, `••••${key.slice(-4)}`), button);
}

export function renderStreams(body: HTMLElement, directory: Directory, status: HTMLElement): void {
  body.replaceChildren(
    ...directory.streams.map((stream) =>
      h(
        'tr',
        { 'data-stream-id': stream.id },
        h('td', {}, h('code', {}, stream.id)),
        h('td', {}, stream.name),
        h('td', {}, stream.owner),
        h('td', {}, stream.custom ? stream.customTargets.join(', ') : '—'),
        h('td', { class: 'num subscribers' }, String(stream.subscribers)),
        h('td', {}, maskedKey(stream.key, `the stream key of ${stream.id}`, status)),
      ),
    ),
  );
}

export function renderUsers(body: HTMLElement, directory: Directory, status: HTMLElement): void {
  body.replaceChildren(
    ...directory.users.map((user) => {
      const targets = Object.entries(user.customTargets).map(([stream, names]) => `${stream}: ${names.join(', ')}`);
      return h(
        'tr',
        { 'data-user-id': user.id },
        h('td', {}, h('code', {}, user.id)),
        h('td', {}, user.name),
        h('td', {}, user.follows.join(', ') || '—'),
        h('td', {}, targets.join('; ') || '—'),
        h('td', {}, maskedKey(user.readerKey, `the reader key of ${user.id}`, status)),
      );
    }),
  );
}
