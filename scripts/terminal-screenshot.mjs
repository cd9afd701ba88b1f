// Makes docs/terminal.png: the built `terminal` in a 120x32 tmux pane against a local
// service with a few posts (one hidden, one markdown open in the detail pane), its screen
// captured with its colours (capture-pane -e), drawn as HTML and photographed by Chromium.
// Run after `npm run build`: node scripts/terminal-screenshot.mjs
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Convert from 'ansi-to-html';
import { chromium } from 'playwright-core';
import { WebSocket } from 'ws';
import { startServer } from '../dist/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const socket = `terminal-shot-${randomBytes(4).toString('hex')}`;
const tmux = (...args) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });

async function publish(url, key, data) {
  const ws = new WebSocket(`${url}/v1/ws`, { headers: { 'x-api-key': key } });
  await new Promise((done, fail) => ws.once('open', done).once('error', fail));
  const reply = new Promise((done, fail) =>
    ws.on('message', (raw) => {
      const text = raw.toString();
      if (text.includes('"event":"ack"')) done();
      else if (text.includes('"event":"error"')) fail(new Error(text));
    }),
  );
  ws.send(JSON.stringify({ event: 'add-stream-post', requestId: 'r', data: { contentType: 'rawtext', ...data } }));
  await reply;
  ws.close();
}

async function screenWith(text) {
  for (let tries = 0; tries < 200; tries++) {
    const screen = tmux('capture-pane', '-p', '-e');
    if (screen.includes(text)) return screen;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`the screen never showed ${text}`);
}

const server = await startServer({ port: 0 });
try {
  const command = `exec env TERM=xterm-256color STREAM_POSTS_API_KEY=sp_demo_reader_alice node ${join(root, 'bin/stream-posts.js')} terminal --url ${server.url}`;
  tmux('-f', '/dev/null', 'new-session', '-d', '-x', '120', '-y', '32', command);
  await screenWith('connected');
  const posts = [
    [
      'sp_demo_stream_whale_alerts',
      {
        streamId: 'whale-alerts',
        customTarget: 'BTC',
        content: '3,100 $BTC (≈ $290M) moved from Coinbase to an unknown wallet https://example.org/tx/9f2c',
      },
    ],
    [
      'sp_demo_stream_crypto_legal',
      {
        streamId: 'crypto-legal',
        content: 'Court grants motion to expedite in the $SOL ETF case',
        releaseAt: new Date(Date.now() + 272_000).toISOString(),
      },
    ],
    [
      'sp_demo_stream_crypto_legal',
      {
        streamId: 'crypto-legal',
        content: 'SEC closes its inquiry into the $ETH foundation; no action recommended https://example.org/sec',
      },
    ],
    [
      'sp_demo_stream_macro_wire',
      {
        streamId: 'macro-wire',
        contentType: 'markdown',
        content:
          '**FOMC holds at 4.25–4.50%**, two cuts still pencilled in for this year; $BTC and $ETH steady\n\n- dot plot unchanged from March\n- statement: inflation *somewhat elevated*\n\n| | now | March |\n|---|---:|---:|\n| 2025 median | 3.9% | 3.9% |\n| 2026 median | 3.4% | 3.4% |\n\n[Statement](https://example.org/fomc) · [Projections](https://example.org/sep)',
      },
    ],
  ];
  for (const [key, data] of posts) await publish(server.url, key, data);
  await screenWith('FOMC holds');
  tmux('send-keys', 'Enter');
  const screen = await screenWith('2026 median');
  const html = new Convert({ fg: '#d8d8d8', bg: '#1c1c1c', escapeXML: true }).toHtml(screen);
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
  const page = await browser.newPage({ viewport: { width: 1000, height: 560 }, deviceScaleFactor: 2 });
  await page.setContent(
    `<body style="margin:0;background:#1c1c1c"><pre style="margin:12px;font:13px/1.25 'DejaVu Sans Mono',monospace;color:#d8d8d8">${html}</pre></body>`,
  );
  await page.screenshot({ path: join(root, 'docs/terminal.png'), fullPage: true });
  await browser.close();
} finally {
  try {
    tmux('kill-server');
  } catch {
    // Already gone.
  }
  await server.close();
}
