// The OpenAPI v2 document the API server serves at `/openapi/v2`: a header with no paths and
// no definitions, as JSON or in the protobuf encoding client-go asks for (Accept
// `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`: gnostic's
// openapi_v2.Document). kubectl validates a `kind: List` on the client against this document
// (it never sends fieldValidation for a List), and without it `create -f` / `apply -f` of a
// List failed with "the server could not find the requested resource". A kind without a
// definition is not checked there; the server validates each item (fieldValidation=Strict)
// as kubectl creates it. Not for schemas: kubectl explain and apply read /openapi/v3. Pure.

/**
 * The Content-Type of the protobuf encoding. Clients ask with `…spec.v2@v1.0+protobuf`, but
 * Go's mime.ParseMediaType refuses the `@`, so client-go fails on a reply labelled that way:
 * the reply is labelled with the dotted form.
 */
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

const TITLE = 'Kubernetes';
const VERSION = 'v1.33.0';

/** The document as JSON. */
export function openAPIV2Document(): Record<string, unknown> {
  return { swagger: '2.0', info: { title: TITLE, version: VERSION }, paths: {}, definitions: {} };
}

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** A length-delimited field (wire type 2): a string or an embedded message. */
function lengthDelimited(field: number, bytes: Uint8Array): number[] {
  return [...varint((field << 3) | 2), ...varint(bytes.length), ...bytes];
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/**
 * The document in protobuf: Document.swagger (1) and Document.info (2) with Info.title (1)
 * and Info.version (2). Empty paths and definitions are left out, as proto3 does.
 */
export function openAPIV2Protobuf(): Uint8Array {
  const info = [...lengthDelimited(1, utf8(TITLE)), ...lengthDelimited(2, utf8(VERSION))];
  return Uint8Array.from([
    ...lengthDelimited(1, utf8('2.0')),
    ...lengthDelimited(2, Uint8Array.from(info)),
  ]);
}
