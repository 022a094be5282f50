// The in-cluster client configuration, as client-go's rest.InClusterConfig builds it for a
// process in a Pod: the API server is https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
// (an IPv6 host in brackets), trusted through the ServiceAccount's `ca.crt`, authenticated by
// its `token`, in the namespace its `namespace` file names. The token is not read once: a
// projected ServiceAccount token rotates (the kubelet rewrites it well before it expires), so
// the client is handed the file, which kubeconfig.ts re-reads when its copy is a minute old
// (client-go's cached file token source has the same period). The
// directory is a parameter so tests use a temporary one; nothing here writes anywhere.
// Not here: choosing between a kubeconfig and this (resolveKubeConfig in kubeconfig.ts does).

import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';

/** Where the kubelet mounts a Pod's ServiceAccount credentials. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface InClusterEnv {
  readonly KUBERNETES_SERVICE_HOST?: string | undefined;
  readonly KUBERNETES_SERVICE_PORT?: string | undefined;
}

/** What the Pod's environment and ServiceAccount volume say. */
export interface InClusterConfig {
  readonly server: string;
  readonly caFile: string;
  readonly tokenFile: string;
  /** The Pod's namespace; undefined when the volume has no `namespace` file. */
  readonly namespace: string | undefined;
}

/** True when the environment names an API server (both variables set, as client-go asks). */
export function hasInClusterEnv(env: InClusterEnv): boolean {
  return (env.KUBERNETES_SERVICE_HOST ?? '') !== '' && (env.KUBERNETES_SERVICE_PORT ?? '') !== '';
}

function readable(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Reads the in-cluster configuration from `env` and the ServiceAccount directory `dir`.
 * Throws INVALID_INPUT naming every missing piece (a variable, the token, ca.crt) at once;
 * unlike client-go, a missing ca.crt is an error rather than a logged warning, since no
 * https connection to the API server could be verified without it.
 */
export function readInClusterConfig(
  env: InClusterEnv,
  dir: string = SERVICE_ACCOUNT_DIR,
): InClusterConfig {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const missing: string[] = [];
  if (host === '') missing.push('$KUBERNETES_SERVICE_HOST is not set');
  if (port === '') missing.push('$KUBERNETES_SERVICE_PORT is not set');
  const tokenFile = join(dir, 'token');
  const caFile = join(dir, 'ca.crt');
  const token = readable(tokenFile);
  if (token === undefined) missing.push(`cannot read ${tokenFile}`);
  else if (token.trim() === '') missing.push(`${tokenFile} is empty`);
  if (readable(caFile) === undefined) missing.push(`cannot read ${caFile}`);
  if (missing.length > 0)
    throw new SvcnetError('INVALID_INPUT', `in-cluster config: not usable (${missing.join('; ')})`);
  const namespace = readable(join(dir, 'namespace'))?.trim();
  return {
    server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    caFile,
    tokenFile,
    namespace: namespace === '' ? undefined : namespace,
  };
}
