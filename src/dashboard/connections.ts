import { ApiError, describeError, request } from './api.js';
import { byId, h, report } from './dom.js';

/** One row of `GET /_admin/connections`. */
interface Connection {
  id: string;
  user: string | null;
  stream: string | null;
  kind: 'user' | 'stream';
  subscriptions: { streamIds: string[]; format: string }[];
  bufferedBytes: number;
  connectedAt: string;
  remoteAddress: string;
}

/** Close codes offered for a connection; another can be typed. */
const CLOSE_CODES: [number, string][] = [
  [1000, 'normal'],
  [1001, 'going away'],
  [1008, 'policy violation'],
  [1011, 'internal error'],
  [1012, 'service restart'],
  [1013, 'try again later'],
  [4000, 'application (4000)'],
];

/** Open connections, each with a way to close it with a chosen code (a `close` fault scoped to it). */
export class ConnectionsPanel {
  readonly #body = byId<HTMLElement>('connections-body');
  readonly #output = byId<HTMLElement>('connections-result');

  constructor(private readonly afterChange: () => void) {
    byId<HTMLButtonElement>('keep-alive-round').addEventListener('click', () => {
      request<{ pinged: number; terminated: number }>('POST', '/_admin/keep-alive', {}).then(
        ({ pinged, terminated }) => {
          report(this.#output, `keep-alive round: ${pinged} pinged, ${terminated} terminated`, 'ok');
          this.afterChange();
        },
        (error: unknown) => report(this.#output, describeError(error), 'error'),
      );
    });
  }

  async refresh(): Promise<void> {
    let connections: Connection[];
    try {
      ({ connections } = await request<{ connections: Connection[] }>('GET', '/_admin/connections'));
    } catch (error) {
      const missing = error instanceof ApiError && error.status === 404;
      report(this.#output, missing ? 'this serve does not list connections' : describeError(error), 'error');
      return;
    }
    // A row already shown stays where it is and only its cells change: its controls (a code
    // chosen, a reason half typed, the focus in it) are never moved or rebuilt by a refresh.
    const shown = new Map(
      [...this.#body.querySelectorAll<HTMLElement>('tr[data-connection-id]')].map((row) => [
        row.dataset['connectionId'],
        row,
      ]),
    );
    // Rows of closed connections, and the "none" line, go first: a row that stays is then not
    // moved past them.
    const open = new Set(connections.map((connection) => connection.id));
    for (const row of [...this.#body.children]) {
      const id = (row as HTMLElement).dataset['connectionId'];
      if (id === undefined || !open.has(id)) row.remove();
    }
    let previous: Element | null = null;
    for (const connection of connections) {
      const fresh = this.#row(connection);
      let row = shown.get(connection.id);
      if (row === undefined) row = fresh;
      else {
        const cells = [...row.querySelectorAll(':scope > td:not(.actions)')];
        const freshCells = [...fresh.querySelectorAll(':scope > td:not(.actions)')];
        cells.forEach((cell, i) => {
          const replacement = freshCells[i];
          if (replacement && cell.innerHTML !== replacement.innerHTML) cell.replaceWith(replacement);
        });
      }
      const at: Element | null = previous === null ? this.#body.firstElementChild : previous.nextElementSibling;
      if (at !== row) this.#body.insertBefore(row, at);
      previous = row;
    }
    if (connections.length === 0) this.#body.append(h('tr', {}, h('td', { colspan: '7', class: 'muted' }, 'none')));
  }

  #row(connection: Connection): HTMLElement {
    const code = h(
      'select',
      { class: 'close-code', 'aria-label': `close code for ${connection.id}` },
      ...CLOSE_CODES.map(([value, name]) => h('option', { value: String(value) }, `${value} ${name}`)),
    );
    code.value = '1000';
    const reason = h('input', { class: 'close-reason', placeholder: 'reason', maxlength: '120' });
    const close = h('button', { type: 'button', class: 'close-connection' }, 'close');
    close.addEventListener('click', () => {
      const fault = {
        type: 'close',
        code: Number(code.value),
        reason: reason.value,
        scope: { connection: connection.id },
      };
      request<{ fault: { applied?: number } }>('POST', '/_admin/faults', fault).then(
        (reply) => {
          report(this.#output, `closed ${connection.id} with ${fault.code} (${reply.fault.applied ?? 0} hit)`, 'ok');
          this.afterChange();
        },
        (error: unknown) => report(this.#output, describeError(error), 'error'),
      );
    });
    const who = connection.kind === 'stream' ? `stream ${connection.stream ?? '?'}` : (connection.user ?? 'no key');
    const subscriptions = connection.subscriptions
      .map((subscription) => `${subscription.streamIds.join(', ') || 'all'} (${subscription.format})`)
      .join('; ');
    return h(
      'tr',
      { 'data-connection-id': connection.id },
      h('td', {}, h('code', {}, connection.id)),
      h('td', {}, who),
      h('td', {}, subscriptions || '—'),
      h('td', { class: 'num' }, String(connection.bufferedBytes)),
      h('td', {}, connection.connectedAt),
      h('td', {}, connection.remoteAddress),
      h('td', { class: 'actions' }, code, reason, close),
    );
  }
}
