// Reading deploy/'s manifests for the lab, and the few edits the lab makes to their workloads:
// the text of a manifest, its documents as plain objects, and a workload (DaemonSet or
// Deployment) with its Pod template's spec or containers changed. The lab's add-ons
// (kube-proxy-addon.ts, coredns-addon.ts) apply the manifests a real cluster applies and
// change values with these, never the objects' structure. Pure but for reading the file.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { packageRoot } from './binaries.js';

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The text of a manifest of deploy/. */
export function readDeployManifest(name: string, root = packageRoot()): string {
  return readFileSync(join(root, 'deploy', name), 'utf8');
}

/** Every document of a manifest that is a mapping, in order. */
export function manifestDocs(text: string): Json[] {
  return parseAllDocuments(text)
    .map((d) => {
      const json: unknown = d.toJSON();
      return json;
    })
    .filter(isObject);
}

/** The workload with its Pod template's spec replaced by `edit` of it. */
export function withPodSpec(workload: Json, edit: (podSpec: Json) => Json): Json {
  const spec = isObject(workload.spec) ? workload.spec : {};
  const template = isObject(spec.template) ? spec.template : {};
  const podSpec = isObject(template.spec) ? template.spec : {};
  return {
    ...workload,
    spec: { ...spec, template: { ...template, spec: edit(podSpec) } },
  };
}

/** The workload with each of its containers replaced by `edit` of it. */
export function withContainers(workload: Json, edit: (container: Json) => Json): Json {
  return withPodSpec(workload, (podSpec) => ({
    ...podSpec,
    containers: (Array.isArray(podSpec.containers) ? (podSpec.containers as unknown[]) : []).map(
      (c) => (isObject(c) ? edit(c) : c),
    ),
  }));
}

/** The workload with its containers' readiness probes run every `period` seconds. */
export function withReadinessPeriod(workload: Json, period: number): Json {
  return withContainers(workload, (c) =>
    isObject(c.readinessProbe)
      ? { ...c, readinessProbe: { ...c.readinessProbe, periodSeconds: period } }
      : c,
  );
}
