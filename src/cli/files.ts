import { access, readFile } from 'node:fs/promises';
import { usageError } from './exit.js';

function reason(error: NodeJS.ErrnoException): string {
  if (error.code === 'ENOENT') return 'no such file';
  if (error.code === 'EACCES') return 'permission denied';
  if (error.code === 'EISDIR') return 'is a directory';
  return error.message;
}

/** A file a flag names, as text; a usage error naming the flag when it cannot be read. */
export async function readTextFile(path: string, label: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw usageError(`cannot read ${label} ${path}: ${reason(error as NodeJS.ErrnoException)}`, { cause: error });
  }
}

/** `--tls-cert` and `--tls-key` read, when both are given. */
export async function readTlsFiles(cert: string | undefined, key: string | undefined) {
  if (cert === undefined || key === undefined) return undefined;
  return { cert: await readTextFile(cert, 'TLS certificate'), key: await readTextFile(key, 'TLS key') };
}

/** Checks a file can be read before a command starts streaming from it. */
export async function checkReadable(path: string, label: string): Promise<void> {
  await access(path).catch((error: NodeJS.ErrnoException) => {
    throw usageError(`cannot read ${label} ${path}: ${reason(error)}`, { cause: error });
  });
}

/** All of standard input, as text. */
export async function readStdinText(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
