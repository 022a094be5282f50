import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalJSON, clone, deepEqual, isPlainObject } from './json.js';

test('deepEqual and canonicalJSON ignore key order and undefined members', () => {
  const a = { x: 1, y: [1, { b: 2, a: undefined }], z: undefined };
  const b = { y: [1, { b: 2 }], x: 1 };
  assert.ok(deepEqual(a, b));
  assert.equal(canonicalJSON(a), canonicalJSON(b));
  assert.equal(canonicalJSON(b), '{"x":1,"y":[1,{"b":2}]}');
  assert.ok(!deepEqual({ x: [1, 2] }, { x: [2, 1] }));
  assert.ok(!deepEqual({ x: 1 }, { x: '1' }));
  // As on the wire (and as canonicalJSON compares): an undefined array item is null.
  assert.ok(deepEqual({ x: [undefined, 1] }, { x: [null, 1] }));
  assert.equal(canonicalJSON({ x: [undefined, 1] }), canonicalJSON({ x: [null, 1] }));
});

test('clone drops undefined as the wire would; isPlainObject rejects arrays and null', () => {
  assert.deepEqual(clone({ a: undefined, b: [1] }), { b: [1] });
  assert.ok(isPlainObject({}));
  assert.ok(!isPlainObject([]));
  assert.ok(!isPlainObject(null));
});
