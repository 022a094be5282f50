#!/usr/bin/env -S node --v8-pool-size=0
// Entry point of the `svcnet-cni` CNI plugin binary: reads the CNI_* environment and the
// network configuration on stdin, runs one operation (src/cni/plugin.ts) with the real
// edges, prints the result or error JSON on stdout and exits 0 or 1. A container runtime
// starts it for every Pod, so it stays small: no commander, no pino, nothing at import time
// beyond what the plugin needs (the npm `build:cni` script bundles it into one file), and
// the shebang turns off V8's worker pool, which only slows a sub-second process's start-up.

import { RealExecer } from '../os/exec.js';
import { RealIp } from '../os/ip.js';
import { RealSysctl } from '../os/sysctl.js';
import { RealTextFiles } from '../os/text-files.js';
import { findPluginBinary } from '../cni/invoke.js';
import { FileIpamStore } from '../cni/ipam-store.js';
import { runPlugin } from '../cni/plugin.js';
import { SUPPORTED_VERSIONS } from '../cni/version.js';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
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
  const execer = new RealExecer();
  const out = await runPlugin(process.env, stdin, {
    ip: new RealIp(execer),
    sysctl: new RealSysctl(),
    files: new RealTextFiles(),
    store: new FileIpamStore(),
    execer,
    findPlugin: findPluginBinary,
  });
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
