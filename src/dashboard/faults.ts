import { ApiError, describeError, request } from './api.js';
import { byId, h, report } from './dom.js';

interface Fault {
  id: string;
  type: string;
  scope?: Record<string, string>;
  createdAt?: string;
  [field: string]: unknown;
}

/** Each fault type's settings as the form starts them (edited as JSON). */
const TEMPLATES: Record<string, object> = {
  close: { code: 1012, reason: 'service restart' },
  'refuse-connections': { status: 503, durationMs: 10000 },
  'pause-deliveries': {},
  'delay-deliveries': { delayMs: 200, jitterMs: 50 },
  'fail-publishes': { count: 3, code: 'unavailable' },
  'drop-acks': { count: 1 },
  'stop-pongs': {},
  'go-silent': {},
  'send-frame': { frame: '{"event":"unknown","data":{}}' },
};

/** Active faults, a form to add one, and buttons to clear one or all. */
export class FaultsPanel {
  readonly #body = byId<HTMLElement>('faults-body');
  readonly #form = byId<HTMLFormElement>('fault-form');
  readonly #type = byId<HTMLSelectElement>('fault-type');
  readonly #settings = byId<HTMLTextAreaElement>('fault-settings');
  readonly #output = byId<HTMLElement>('faults-result');

  constructor(private readonly afterChange: () => void) {
    this.#type.replaceChildren(...Object.keys(TEMPLATES).map((type) => h('option', { value: type }, type)));
    const fill = () => (this.#settings.value = JSON.stringify(TEMPLATES[this.#type.value] ?? {}));
    this.#type.addEventListener('change', fill);
    fill();
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#add();
    });
    byId('faults-clear').addEventListener('click', () => void this.#clear('/_admin/faults', 'cleared every fault'));
  }

  async refresh(): Promise<void> {
    let faults: Fault[];
    try {
      ({ faults } = await request<{ faults: Fault[] }>('GET', '/_admin/faults'));
    } catch (error) {
      const missing = error instanceof ApiError && error.status === 404;
      report(this.#output, missing ? 'this serve has no fault injection' : describeError(error), 'error');
      return;
    }
    this.#body.replaceChildren(...faults.map((fault) => this.#row(fault)));
    if (faults.length === 0) this.#body.append(h('tr', {}, h('td', { colspan: '4', class: 'muted' }, 'none')));
  }

  #row(fault: Fault): HTMLElement {
    const { id, type, scope, createdAt, ...settings } = fault;
    const clear = h('button', { type: 'button', class: 'clear-fault' }, 'clear');
    clear.addEventListener(
      'click',
      () => void this.#clear(`/_admin/faults/${encodeURIComponent(id)}`, `cleared ${id}`),
    );
    const scopeText = Object.entries(scope ?? {})
      .map(([name, value]) => `${name} ${value}`)
      .join(', ');
    return h(
      'tr',
      { 'data-fault-id': id },
      h('td', {}, h('code', {}, id), ' ', type),
      h('td', {}, h('code', {}, JSON.stringify(settings))),
      h('td', {}, scopeText || 'all connections'),
      h('td', { class: 'actions' }, createdAt ?? '', ' ', clear),
    );
  }

  async #add(): Promise<void> {
    let settings: unknown;
    try {
      settings = JSON.parse(this.#settings.value || '{}');
    } catch {
      report(this.#output, 'settings must be a JSON object, such as {"count": 3}', 'error');
      return;
    }
    if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
      report(this.#output, 'settings must be a JSON object, such as {"count": 3}', 'error');
      return;
    }
    const fields = new FormData(this.#form);
    const scope: Record<string, string> = {};
    for (const name of ['user', 'stream', 'connection']) {
      const value = String(fields.get(`scope-${name}`) ?? '').trim();
      if (value !== '') scope[name] = value;
    }
    const fault = { ...settings, type: this.#type.value, ...(Object.keys(scope).length > 0 ? { scope } : {}) };
    try {
      const reply = await request<{ fault: Fault & { applied?: number } }>('POST', '/_admin/faults', fault);
      const applied = reply.fault.applied === undefined ? '' : ` (${reply.fault.applied} hit)`;
      report(this.#output, `added ${reply.fault.id} ${reply.fault.type}${applied}`, 'ok');
      this.afterChange();
    } catch (error) {
      report(this.#output, describeError(error), 'error');
    }
  }

  async #clear(path: string, done: string): Promise<void> {
    try {
      await request('DELETE', path);
      report(this.#output, done, 'ok');
      this.afterChange();
    } catch (error) {
      report(this.#output, describeError(error), 'error');
    }
  }
}
