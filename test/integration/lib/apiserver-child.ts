// `svcnet apiserver` as a child process on loopback, for tests that watch the server from
// outside: its RSS, its data dir, its file descriptors. Reads the URL from the
// "API server listening" log line and the token and CA from the kubeconfig it writes.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ApiServerChild {
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** PEM file of the serving CA (for curl --cacert). */
  readonly caFile: string;
  readonly kubeconfig: string;
  readonly dataDir: string;
  readonly dir: string;
  readonly pid: number;
  /** Resident set size of the server process in MiB. */
  rssMiB(): number;
  /** Open file descriptors of the server process. */
  openFds(): number;
  /** Bytes under the data dir. */
  dataDirBytes(): number;
  stop(): Promise<void>;
}

const REPO = new URL('../../../', import.meta.url).pathname;

function dirBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { recursive: true })) {
    const st = statSync(join(dir, String(e)));
    if (st.isFile()) total += st.size;
  }
  return total;
}

/** Starts `svcnet apiserver` with a data dir in a fresh temp dir; `args` are extra flags. */
export async function startApiServerChild(args: string[] = []): Promise<ApiServerChild> {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-apiserver-child-'));
  const dataDir = join(dir, 'data');
  const kubeconfig = join(dir, 'kubeconfig');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(REPO, 'src/cli/main.ts'),
      'apiserver',
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      dataDir,
      '--write-kubeconfig',
      kubeconfig,
      ...args,
    ],
    { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error('apiserver child did not start');
  const url = await new Promise<string>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => {
      reject(new Error(`apiserver child did not listen in 30 s: ${err}`));
    }, 30_000);
    child.stderr?.on('data', (b: Buffer) => {
      err += b.toString();
      const m = /"url":"([^"]+)"/.exec(err);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`apiserver child exited ${code}: ${err}`));
    });
  });
  child.stderr?.resume();
  const kc = readFileSync(kubeconfig, 'utf8');
  const token = /token: (\S+)/.exec(kc)?.[1] ?? '';
  const ca = /certificate-authority-data: (\S+)/.exec(kc)?.[1] ?? '';
  const caFile = join(dir, 'ca.crt');
  writeFileSync(caFile, Buffer.from(ca, 'base64'));
  return {
    url,
    port: Number(new URL(url).port),
    token,
    caFile,
    kubeconfig,
    dataDir,
    dir,
    pid,
    rssMiB() {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
    },
    openFds() {
      return readdirSync(`/proc/${pid}/fd`).length;
    },
    dataDirBytes() {
      return dirBytes(dataDir);
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
