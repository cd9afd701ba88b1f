/** The publishing connection of the benchmarks that publish from the measuring process. */
import { WebSocket } from 'ws';

/** Opens a WebSocket with `headers` and resolves to it once the server's first frame is `connected` (rejects on any other). */
export function openPublisher(url, headers) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false });
    ws.once('error', reject);
    ws.once('message', (data) => {
      const text = data.toString('utf8');
      if (!text.includes('"event":"connected"')) reject(new Error(`publisher not accepted: ${text}`));
      else resolve(ws);
    });
  });
}
