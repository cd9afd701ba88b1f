// What a recording must never hold, and the placeholders that stand for it. Every text that
// reaches the recording (a query value, a header, a frame, a body) passes `scrub` first; a
// secret is learned from the places a client puts one (the handshake, `login KEY`, graphql-ws
// `connectionParams`) and from the places a service hands one out (upload addresses).
import { keyPlaceholder, uploadPlaceholder, type RedactionKind, type RedactionNote } from '../../protocol/recording.js';
import { secretScrubber } from '../../protocol/redact.js';

/** Below this a value is no credential a service issues, and replacing it would garble every text. */
const MIN_SECRET_LENGTH = 8;
/** Texts seen again (one post fanned out to many subscribers) are scrubbed once while they stay this few. */
const MEMO_SIZE = 256;
/** What the scrubber decodes before it looks (percent and `\\u` escapes). */
export const ESCAPED = /%[0-9a-f]{2}|\\u[0-9a-f]{4}/i;

interface Secret {
  kind: RedactionKind;
  placeholder: string;
  scrub: (text: string) => string;
  /** How many places it was replaced in. */
  count: number;
}

export class RecordSecrets {
  readonly #secrets = new Map<string, Secret>();
  #keys = 0;
  #uploads = 0;
  #admin = 0;
  readonly #memo = new Map<string, string>();
  #version = 0;

  /** Changes whenever a secret is learned: what was scrubbed before may need scrubbing again. */
  get version(): number {
    return this.#version;
  }

  /** The placeholder of an API key, learned now if it is new. */
  key(value: string): string {
    return this.#learn(value, 'api-key');
  }

  /** The placeholder of an upload token or signature, learned now if it is new. */
  upload(value: string): string {
    return this.#learn(value, 'upload-url');
  }

  /** An admin token: never forwarded, but looked for all the same. */
  admin(value: string): string {
    return this.#learn(value, 'admin-token');
  }

  #learn(value: string, kind: RedactionKind): string {
    const known = this.#secrets.get(value);
    if (known) return known.placeholder;
    if (value.length < MIN_SECRET_LENGTH) return value;
    const placeholder =
      kind === 'api-key'
        ? keyPlaceholder((this.#keys += 1))
        : kind === 'upload-url'
          ? uploadPlaceholder((this.#uploads += 1))
          : `<admin-token-${(this.#admin += 1)}>`;
    this.#secrets.set(value, { kind, placeholder, scrub: secretScrubber([value], placeholder), count: 0 });
    this.#memo.clear();
    this.#version += 1;
    return placeholder;
  }

  /** `text` with every secret learned so far replaced by its placeholder, in any escaped form the scrubber knows. */
  scrub(text: string): string {
    if (this.#secrets.size === 0) return text;
    // Most texts hold no secret and no escape: a native search settles them.
    if (!ESCAPED.test(text) && !this.#holdsPlain(text)) return text;
    const memo = this.#memo.get(text);
    if (memo !== undefined) {
      if (memo !== text) this.#countIn(memo, text);
      return memo;
    }
    let out = text;
    for (const secret of this.#secrets.values()) out = secret.scrub(out);
    if (this.#memo.size >= MEMO_SIZE) this.#memo.delete(this.#memo.keys().next().value!);
    this.#memo.set(text, out);
    if (out !== text) this.#countIn(out, text);
    return out;
  }

  #holdsPlain(text: string): boolean {
    for (const value of this.#secrets.keys()) if (text.includes(value)) return true;
    return false;
  }

  #countIn(scrubbed: string, original: string): void {
    for (const secret of this.#secrets.values()) {
      const added = occurrences(scrubbed, secret.placeholder) - occurrences(original, secret.placeholder);
      if (added > 0) secret.count += added;
    }
  }

  /** Every secret value seen, for the last scan before a save. */
  values(): { value: string; placeholder: string }[] {
    return [...this.#secrets].map(([value, secret]) => ({ value, placeholder: secret.placeholder }));
  }

  /** The replacements made, for `meta.redactions` (never a value). */
  notes(): RedactionNote[] {
    return [...this.#secrets.values()]
      .filter((secret) => secret.count > 0)
      .map(({ kind, placeholder, count }) => ({ kind, placeholder, count }));
  }
}

function occurrences(text: string, part: string): number {
  let count = 0;
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + part.length)) count += 1;
  return count;
}
