/** Where a local `serve` answers admin requests: `faults`' default `--admin-url`. */
export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8787/_admin';
