// The rows of serve's option table (serve-options.ts) about a recording served back: kept
// apart so the table stays one screen a topic. Pure data, as the table is.

export const REPLAY_SERVE_OPTIONS = {
  replay: {
    flag: '--replay <file>',
    type: 'file',
    shownDefault: '—',
    api: true,
    doc: 'answer from a recording (docs/record-replay.md), with no upstream',
  },
  replaySpeed: {
    flag: '--replay-speed <speed>',
    type: 'string',
    default: 'recorded',
    shownDefault: '`recorded`',
    api: true,
    doc: 'with --replay: recorded (the recorded offsets), N (N times faster), or max (the order kept, no waits)',
  },
  replayTimes: {
    flag: '--replay-times <mode>',
    type: 'choice',
    choices: ['shifted', 'as-recorded'],
    default: 'shifted',
    shownDefault: '`shifted`',
    api: true,
    doc: "with --replay: shifted (recorded date-times moved so the recording's start is now) or as-recorded",
  },
  replayIgnore: {
    flag: '--replay-ignore <field>',
    type: 'list',
    shownDefault: '—',
    api: true,
    doc: 'with --replay: a field of client frames and request bodies never compared: a name anywhere, or a dotted path from the top (repeatable)',
  },
  replayFallback: {
    flag: '--replay-fallback',
    type: 'boolean',
    default: false,
    shownDefault: 'off',
    api: true,
    doc: 'with --replay: what the recording has no answer for goes to the simulated service (else close 4400, or 404)',
  },
  replayStrict: {
    flag: '--replay-strict',
    type: 'boolean',
    default: false,
    shownDefault: 'off',
    api: false,
    doc: 'with --replay: exit 1 when anything matched no recorded exchange or a recorded connection or request went unused',
  },
} as const;
