// Placeholder replaced below.
import type { ResourceType } from './resources.js';
import { ApiError } from './status.js';

export function isProtobufContentType(ct: string): boolean {
  return ct.split(';')[0]?.trim().toLowerCase() === 'application/vnd.kubernetes.protobuf';
}

export function decodeProtobufObject(_raw: Uint8Array, _rt: ResourceType): unknown {
  throw ApiError.unsupportedMediaType('application/vnd.kubernetes.protobuf');
}
