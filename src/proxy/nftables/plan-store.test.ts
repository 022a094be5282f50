import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NftElement } from '../../netfilter/nftables/model.js';
import { BucketMap, ElementStoreDraft, effective, slotKey } from './plan-store.js';
import type { ElementSlot } from './plan-store.js';

function el(value: string): NftElement {
  return {
    family: 'ip',
    table: 'kube-proxy',
    kind: 'element',
    set: 'service-ips',
    key: ['10.96.0.1', 'tcp', '80'],
    value: { kind: 'goto', chain: value },
  };
}

test('element store: one owner, two owners (lowest port key wins, conflict noted), back to one, none', () => {
  const store = new ElementStoreDraft(BucketMap.empty<ElementSlot>().draft());
  const b = el('chain-b');
  const a = el('chain-a');
  const k = slotKey(b);
  assert.equal(k, 'service-ips|10.96.0.1 . tcp . 80');
  store.add('ns/b:http/TCP', b);
  assert.equal(effective(store.draft.get(k)), b);
  store.add('ns/a:http/TCP', a);
  assert.equal(effective(store.draft.get(k)), a, 'the lowest port key wins');
  assert.equal(store.conflicts.length, 1);
  store.add('ns/a:http/TCP', a);
  assert.equal(effective(store.draft.get(k)), a, 're-adding an owner replaces it');
  store.remove('ns/a:http/TCP', a);
  assert.equal(effective(store.draft.get(k)), b, 'the other owner remains');
  store.remove('ns/x:http/TCP', a);
  assert.equal(effective(store.draft.get(k)), b, 'a stranger removes nothing');
  store.remove('ns/b:http/TCP', b);
  assert.equal(store.draft.get(k), undefined);
  assert.equal(store.draft.finish().size, 0);
  assert.deepEqual([...store.touched], [k]);
});
