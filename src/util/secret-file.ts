// Writing files that hold a bearer token or a private key (kubeconfigs, tls.key): always
// mode 0600, whatever was at the path before, and never half-written. The data goes to a
// temporary file created 0600 in the same directory, is fsync'd, and is renamed over the
// path, so a reader sees the old file or the new one and no one sees the secret in a file
// with wider permissions (writeFile's `mode` applies only when it creates the file).

import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Writes `data` to `path` as a 0600 file through a temp file + rename. */
export function writeSecretFile(path: string, data: string | Uint8Array): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    // The umask may only have narrowed 0600; make it exact.
    fchmodSync(fd, 0o600);
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
