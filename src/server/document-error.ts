/**
 * A document given to the server (a seed, a scenario, a state file, a recording) that cannot be used:
 * `where` names the place in it (a field path, a step or line, the file) and the message
 * says what is wrong there. Nothing was changed.
 */
export class DocumentError extends Error {
  constructor(
    readonly code: 'invalid-seed' | 'invalid-scenario' | 'invalid-state' | 'invalid-recording',
    readonly where: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(where === '' ? detail : `${where}: ${detail}`, options);
    this.name = new.target.name;
  }
}
