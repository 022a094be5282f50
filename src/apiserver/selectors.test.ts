import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
} from './selectors.js';
import { ApiError } from './status.js';

describe('selectors', () => {
  it('parses and matches the label grammar', () => {
    const labels = { app: 'web', tier: 'fe', n: '5' };
    const yes = [
      'app=web',
      'app==web',
      'tier!=be',
      'app in (web, db)',
      'x notin (a)',
      'app',
      '!x',
      'n gt 4',
      'n lt 6',
      'app=web,tier',
      '',
    ];
    const no = ['app=db', 'app notin (web)', '!app', 'x', 'n gt 5', 'app in (db)'];
    for (const s of yes) assert.ok(matchesLabels(parseLabelSelector(s), labels), s);
    for (const s of no) assert.ok(!matchesLabels(parseLabelSelector(s), labels), s);
    assert.ok(matchesLabels(parseLabelSelector('!service.kubernetes.io/service-proxy-name'), {}));
    assert.throws(() => parseLabelSelector('a=b=c'), ApiError);
    assert.throws(() => parseLabelSelector('-bad=x'), ApiError);
  });

  it('parses field selectors with escapes', () => {
    const sel = parseFieldSelector('metadata.name=a\\,b,spec.nodeName!=n1');
    assert.deepEqual(sel, [
      { field: 'metadata.name', op: '=', value: 'a,b' },
      { field: 'spec.nodeName', op: '!=', value: 'n1' },
    ]);
    const f: Record<string, string> = { 'metadata.name': 'a,b', 'spec.nodeName': 'n2' };
    assert.ok(matchesFields(sel, (k) => f[k]));
    assert.ok(!matchesFields(parseFieldSelector('spec.nodeName=n1'), (k) => f[k]));
  });
});
