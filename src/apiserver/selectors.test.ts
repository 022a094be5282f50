import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatLabelSelectorObject,
  matchesFields,
  parseFieldSelector,
  parseLabelSelector,
} from './selectors.js';
import { ApiError } from './status.js';

describe('selectors', () => {
  it('answers a label selector that does not parse as 400 BadRequest', () => {
    assert.deepEqual(parseLabelSelector('app in (web,db)'), [
      { key: 'app', op: 'in', values: ['web', 'db'] },
    ]);
    assert.throws(() => parseLabelSelector('a=b=c'), ApiError);
    assert.throws(() => parseLabelSelector('-bad=x'), {
      status: 400,
      reason: 'BadRequest',
      message: 'unable to parse requirement: invalid label key "-bad" (in selector "-bad=x")',
    });
  });

  it('formats a LabelSelector as kubectl shows it', () => {
    assert.equal(formatLabelSelectorObject({}), '<none>');
    assert.equal(
      formatLabelSelectorObject({
        matchLabels: { tier: 'fe', app: 'web' },
        matchExpressions: [{ key: 'x', operator: 'In', values: ['b', 'a'] }],
      }),
      'app=web,tier=fe,x in (a,b)',
    );
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
