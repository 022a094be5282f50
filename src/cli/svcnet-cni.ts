#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS node --v8-pool-size=0
// Entry point of the `svcnet-cni` CNI plugin binary: reads the CNI_* environment and the
// network configuration on stdin, runs one operation (src/cni/plugin.ts) with the real
// edges, prints the result or error JSON on stdout and exits 0 or 1. A container runtime
// starts it for every Pod, so it stays small: no commander, no pino, nothing at import time
// beyond what the plugin needs (the npm `build:cni` script bundles it into one file), and
// the shebang turns off V8's worker pool, which only slows a sub-second process's start-up,
// and drops NODE_EXTRA_CA_CERTS, which Node 20 reads and parses at start (tens of ms) for a
// plugin that never speaks TLS. The lab's agent does not start it: it calls the same
// runPlugin in-process (src/cni/in-process.ts).

import { readSync } from 'node:fs';
import { RealExecer } from '../os/exec.js';
import { realPluginDeps } from '../cni/in-process.js';
import { runPlugin } from '../cni/plugin.js';
import { SUPPORTED_VERSIONS } from '../cni/version.js';

function isErrno(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

/**
 * The config on stdin. Synchronous reads of fd 0 take what is there already (a runtime
 * writes the config and closes the pipe long before Node has started) in well under a
 * millisecond, where the stream iterator took ~9 ms of event-loop turns. A non-blocking
 * descriptor with more to come (EAGAIN: Node's own spawn gives a socket) continues with
 * the stream, after the bytes already read.
 */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  const buf = Buffer.allocUnsafe(65536);
  for (;;) {
    let n: number;
    try {
      n = readSync(0, buf, 0, buf.length, null);
    } catch (e) {
      if (isErrno(e, 'EAGAIN')) break;
      throw e;
    }
    if (n === 0) return Buffer.concat(chunks).toString('utf8');
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  if (process.env.CNI_COMMAND === undefined && process.stdin.isTTY) {
    process.stderr.write(
      `svcnet-cni: CNI plugin (ptp and bridge modes, flannel type, host-local style IPAM)\nsupported CNI versions: ${SUPPORTED_VERSIONS.join(', ')}\nrun by a container runtime with CNI_COMMAND and friends set and the network config on stdin\n`,
    );
    process.exitCode = 1;
    return;
  }
  const stdin = await readStdin();
  const out = await runPlugin(process.env, stdin, realPluginDeps(new RealExecer()));
  if (out.stdout !== '') process.stdout.write(`${out.stdout}\n`);
  process.exitCode = out.exitCode;
}

main().catch((e: unknown) => {
  // runPlugin never throws; this is a last resort (e.g. stdin unreadable): spec code 5.
  process.stdout.write(
    `${JSON.stringify({ code: 5, msg: `svcnet-cni: ${e instanceof Error ? e.message : String(e)}` })}\n`,
  );
  process.exitCode = 1;
});
