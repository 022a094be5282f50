// API errors as kube-apiserver reports them: a `Status` object with reason, code, details
// and (for 422 Invalid) one cause per field. ApiError is the API boundary's SvcnetError
// subclass; the HTTP edge turns it into the JSON body kubectl and client-node parse.
// Message formats follow apimachinery's errors package so kubectl prints what users know.

import { SvcnetError, type ErrorCode, type FieldError, type FieldErrorType } from '../errors.js';

export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'BadRequest'
  | 'Expired'
  | 'Gone'
  | 'Timeout'
  | 'InsufficientStorage'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge'
  | 'Unauthorized'
  | 'Forbidden'
  | 'InternalError';

export type CauseType = FieldErrorType;

export interface StatusCause {
  readonly reason: CauseType | 'ResourceVersionTooLarge';
  readonly message: string;
  readonly field: string;
}

export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly causes?: readonly StatusCause[];
  readonly retryAfterSeconds?: number;
}

export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message: string;
  reason: StatusReason | '';
  details?: StatusDetails;
  code: number;
}

const CODES: Record<StatusReason, ErrorCode> = {
  NotFound: 'NOT_FOUND',
  AlreadyExists: 'CONFLICT',
  Conflict: 'CONFLICT',
  Invalid: 'INVALID_INPUT',
  BadRequest: 'INVALID_INPUT',
  Expired: 'CONFLICT',
  Gone: 'CONFLICT',
  Timeout: 'TIMEOUT',
  InsufficientStorage: 'INTERNAL',
  MethodNotAllowed: 'UNSUPPORTED',
  NotAcceptable: 'UNSUPPORTED',
  UnsupportedMediaType: 'UNSUPPORTED',
  RequestEntityTooLarge: 'INVALID_INPUT',
  Unauthorized: 'INVALID_INPUT',
  Forbidden: 'INVALID_INPUT',
  InternalError: 'INTERNAL',
};

/** `services`, `deployments.apps`: how apimachinery names a resource in messages. */
export function qualifiedResource(group: string, plural: string): string {
  return group === '' ? plural : `${plural}.${group}`;
}

/** How messages name one object (`services "web"`) and the details its Status carries. */
function objectRef(group: string, plural: string, name: string): [string, StatusDetails] {
  return [`${qualifiedResource(group, plural)} "${name}"`, { name, group, kind: plural }];
}

/** An error the API reports as a Status with an HTTP code. */
export class ApiError extends SvcnetError {
  readonly status: number;
  readonly reason: StatusReason;
  readonly details: StatusDetails | undefined;

  constructor(status: number, reason: StatusReason, message: string, details?: StatusDetails) {
    super(CODES[reason], message);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
    this.details = details;
  }

  toStatus(): StatusBody {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details !== undefined ? { details: this.details } : {}),
      code: this.status,
    };
  }

  static notFound(group: string, plural: string, name: string): ApiError {
    const [ref, details] = objectRef(group, plural, name);
    return new ApiError(404, 'NotFound', `${ref} not found`, details);
  }

  static alreadyExists(group: string, plural: string, name: string): ApiError {
    const [ref, details] = objectRef(group, plural, name);
    return new ApiError(409, 'AlreadyExists', `${ref} already exists`, details);
  }

  static conflict(group: string, plural: string, name: string, why?: string): ApiError {
    const [ref, details] = objectRef(group, plural, name);
    return new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${ref}: ${
        why ??
        'the object has been modified; please apply your changes to the latest version and try again'
      }`,
      details,
    );
  }

  static invalid(group: string, kind: string, name: string, causes: StatusCause[]): ApiError {
    const parts = causes.map((c) => (c.field === '' ? c.message : `${c.field}: ${c.message}`));
    const joined = parts.length === 1 ? (parts[0] ?? '') : `[${parts.join(', ')}]`;
    return new ApiError(422, 'Invalid', `${kind} "${name}" is invalid: ${joined}`, {
      name,
      group,
      kind,
      causes,
    });
  }

  static badRequest(message: string): ApiError {
    return new ApiError(400, 'BadRequest', message);
  }

  static gone(message: string): ApiError {
    return new ApiError(410, 'Expired', message);
  }

  /** A watch or list from a resourceVersion the server has not reached (kube-apiserver: 504). */
  static tooLargeResourceVersion(requested: number, current: number): ApiError {
    return new ApiError(
      504,
      'Timeout',
      `Too large resource version: ${requested}, current: ${current}`,
      {
        causes: [
          {
            reason: 'ResourceVersionTooLarge',
            message: 'Too large resource version',
            field: '',
          },
        ],
        retryAfterSeconds: 1,
      },
    );
  }

  /** Storage past its quota (etcd's NOSPACE alarm): writes refused, reads served. */
  static insufficientStorage(message: string): ApiError {
    return new ApiError(507, 'InsufficientStorage', message);
  }

  static methodNotAllowed(message: string): ApiError {
    return new ApiError(405, 'MethodNotAllowed', message);
  }

  static unsupportedMediaType(contentType: string): ApiError {
    return new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got ${contentType})`,
    );
  }

  static internal(message: string): ApiError {
    return new ApiError(500, 'InternalError', `Internal error occurred: ${message}`);
  }
}

const CAUSE_PREFIX: Record<CauseType, string> = {
  FieldValueRequired: 'Required value',
  FieldValueInvalid: 'Invalid value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
};

function formatValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return v === undefined ? 'null' : JSON.stringify(v);
}

/**
 * A cause in apimachinery's format: `Invalid value: 0: must be 1-65535`. A FieldError from
 * src/kube/validate.ts carries the type and offending value when it knows them; its trailing
 * `, got X` is dropped when the value is printed up front anyway.
 */
export function causeFromFieldError(e: FieldError): StatusCause {
  let reason: CauseType = e.reason ?? 'FieldValueInvalid';
  let message = e.message;
  if (e.reason === undefined && message === 'required') reason = 'FieldValueRequired';
  if (reason === 'FieldValueRequired' && (message === 'required' || message === '')) message = '';
  if (reason === 'FieldValueDuplicate') message = '';
  const hasValue = Object.hasOwn(e, 'value') && reason !== 'FieldValueRequired';
  if (hasValue) {
    const suffix = `, got ${(JSON.stringify(e.value) as string | undefined) ?? String(e.value)}`;
    if (message.endsWith(suffix)) message = message.slice(0, -suffix.length);
  }
  const head = CAUSE_PREFIX[reason];
  const valuePart = hasValue && reason !== 'FieldValueForbidden' ? `: ${formatValue(e.value)}` : '';
  return {
    reason,
    field: e.field,
    message: message === '' ? `${head}${valuePart}` : `${head}${valuePart}: ${message}`,
  };
}

/** Shorthand for an apiserver-side field error. */
export function fieldCause(
  reason: CauseType,
  field: string,
  detail: string,
  ...value: [] | [unknown]
): StatusCause {
  const head = CAUSE_PREFIX[reason];
  const valuePart =
    value.length === 1 && reason !== 'FieldValueForbidden' && reason !== 'FieldValueRequired'
      ? `: ${formatValue(value[0])}`
      : '';
  return {
    reason,
    field,
    message: detail === '' ? `${head}${valuePart}` : `${head}${valuePart}: ${detail}`,
  };
}
