// `svcnet lab pod-host --socket PATH`: the pod host process (pod-host.ts) a node agent starts
// in its node's namespace. It serves until SIGTERM/SIGINT, then kills its containers (as a
// container runtime going down takes its containers with it) and removes its socket.

import { rmSync } from 'node:fs';
import type pino from 'pino';
import { RealNetnsEnterer } from '../os/netns-enter.js';
import { PodHost } from './pod-host.js';

export async function runPodHost(
  socketPath: string,
  log: pino.Logger,
  stop: Promise<unknown>,
): Promise<void> {
  const enter = new RealNetnsEnterer();
  const host = new PodHost({ enter, log });
  const server = await host.listen(socketPath);
  log.info({ socket: socketPath, pid: process.pid }, 'Pod host serving');
  await stop;
  server.close();
  await host.killAll();
  rmSync(socketPath, { force: true });
  enter.close();
  log.info({}, 'Pod host stopped');
}
