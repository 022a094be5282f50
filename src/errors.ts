// The one error base class of svcnet. Every error that crosses a module boundary is a
// SvcnetError with a stable `code` (branch on codes, never on messages) and an optional
// `cause`. Boundaries subclass it (exec, iptables, nft, API Status, CNI) with their own codes.

/** Stable error codes. Add a code here before throwing it anywhere. */
export type ErrorCode =
  | 'INVALID_INPUT' // user-supplied object, manifest, flag or file is wrong (CLI exit 2)
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'EXEC_FAILED'
  | 'IPTABLES_RESTORE_FAILED'
  | 'NFT_FAILED'
  | 'UNSUPPORTED'
  | 'TIMEOUT'
  | 'API_FAILED' // a list/watch/request to the Kubernetes API failed (auth, unreachable, HTTP error)
  | 'LISTEN_FAILED' // a daemon could not bind one of its listeners (CLI exit 1)
  | 'CONFIG_CHANGED' // a daemon's config file changed under it; it exits to be restarted (CLI exit 1)
  | 'INTERNAL';

export class SvcnetError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'SvcnetError';
  }
}

/** The kind of a field problem, as Kubernetes' `Status` causes name it. */
export type FieldErrorType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueDuplicate'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany';

/** One problem with one field of one object: `Service default/web: spec.ports[1].port: ...`. */
export interface FieldError {
  /** e.g. `Service default/web`, or a file name when the object is unknown. */
  readonly object: string;
  /** JSON-path-like field, e.g. `spec.ports[1].port`; empty when the whole object is wrong. */
  readonly field: string;
  readonly message: string;
  /** Kind of problem (the API server's 422 cause reason); FieldValueInvalid when absent. */
  readonly reason?: FieldErrorType;
  /** The offending value, when there is one (the API server prints it in the cause). */
  readonly value?: unknown;
}

export function formatFieldError(e: FieldError): string {
  return e.field === '' ? `${e.object}: ${e.message}` : `${e.object}: ${e.field}: ${e.message}`;
}

/**
 * Validation failure carrying every field error found (validation collects all of them
 * before failing). Its message lists them one per line.
 */
export class ValidationError extends SvcnetError {
  readonly errors: readonly FieldError[];

  constructor(errors: readonly FieldError[]) {
    super('INVALID_INPUT', errors.map(formatFieldError).join('\n'));
    this.errors = errors;
    this.name = 'ValidationError';
  }
}
