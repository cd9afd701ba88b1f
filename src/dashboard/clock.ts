/** The service's time, as last told by `serve`, running on between messages. */
let base = Date.now();
let at = performance.now();

export function setServiceNow(iso: string): void {
  const parsed = Date.parse(iso);
  if (Number.isNaN(parsed)) return;
  base = parsed;
  at = performance.now();
}

export function serviceNow(): number {
  return base + (performance.now() - at);
}
