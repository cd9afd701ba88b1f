/**
 * A clock the processes of one machine share, and post content that carries
 * it, so that a subscriber process can time a post from its publishing.
 */

/** Milliseconds since the epoch, to a fraction (performance.timeOrigin + performance.now()): comparable across processes of one machine. */
export const now = () => performance.timeOrigin + performance.now();

const FILLER =
  ' CPI m/m 0.2% vs 0.3% expected, core 0.2%, y/y 2.9%. Treasury yields fall 6 bp after the print; ' +
  '$BTC up 1.2% on the hour, $ETH up 0.8%. Full release: https://example.org/cpi ';

const pad = (value, width) => String(value).padStart(width, '0');

/**
 * Post content of `contentBytes` characters: the header `<mark>RRRR:SSSSSS:TTTTTTTTTTTTTTTT:`
 * (run, sequence number, and now() in whole microseconds), then filler.
 */
export function timedContent(mark, run, seq, contentBytes) {
  const head = `${mark}${pad(run, 4)}:${pad(seq, 6)}:${pad(Math.round(now() * 1000), 16)}:`;
  return (head + FILLER.repeat(Math.ceil(contentBytes / FILLER.length))).slice(0, contentBytes);
}

/** Where run, sequence number and time start in a timedContent header, counted from the start of `mark`; read them with digits(). */
export function timedFields(mark) {
  return { runAt: mark.length, seqAt: mark.length + 5, timeAt: mark.length + 12 };
}
