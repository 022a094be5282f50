// The one label-selector grammar and matcher: text selectors (equality- and set-based, gt/lt),
// metav1 LabelSelector objects, Service selector maps, and parse errors with upstream text.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LabelSelectorError,
  labelSelectorFromObject,
  matchesLabels,
  matchesSelectorMap,
  parseLabelSelector,
} from './selectors.js';

describe('label selectors', () => {
  it('parses and matches the text grammar', () => {
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
    assert.throws(() => parseLabelSelector('a=b=c'), LabelSelectorError);
    assert.throws(() => parseLabelSelector('-bad=x'), {
      name: 'LabelSelectorError',
      code: 'INVALID_INPUT',
      message: 'unable to parse requirement: invalid label key "-bad" (in selector "-bad=x")',
    });
  });

  it('matches metav1 LabelSelector objects (matchLabels and matchExpressions)', () => {
    const sel = labelSelectorFromObject({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['fe', 'be'] },
        { key: 'canary', operator: 'DoesNotExist' },
      ],
    });
    assert.ok(matchesLabels(sel, { app: 'web', tier: 'fe' }));
    assert.ok(!matchesLabels(sel, { app: 'web', tier: 'db' }));
    assert.ok(!matchesLabels(sel, { app: 'web', tier: 'fe', canary: '' }));
    assert.ok(matchesLabels(labelSelectorFromObject({}), undefined));
  });

  it('matches Service selector maps; the empty map selects everything', () => {
    assert.ok(matchesSelectorMap({}, undefined));
    assert.ok(matchesSelectorMap({ app: 'web' }, { app: 'web', x: 'y' }));
    assert.ok(!matchesSelectorMap({ app: 'web' }, { app: 'db' }));
    assert.ok(!matchesSelectorMap({ app: 'web' }, undefined));
  });
});
