import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeExecer } from './exec.js';
import { parseNoFileLimit, raiseNoFileLimit, type NoFileLimit } from './rlimit.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('RLIMIT_NOFILE', () => {
  it('parses /proc/self/limits', () => {
    assert.deepEqual(parseNoFileLimit(LIMITS), { soft: 1024, hard: 524288 });
    assert.deepEqual(
      parseNoFileLimit('Max open files            unlimited            unlimited            files'),
      { soft: Infinity, hard: Infinity },
    );
    assert.equal(parseNoFileLimit('nothing'), undefined);
  });

  it('raises the soft limit to the hard one with prlimit on its own pid', async () => {
    const states: NoFileLimit[] = [
      { soft: 1024, hard: 524288 },
      { soft: 524288, hard: 524288 },
    ];
    const exec = new FakeExecer().expect({
      cmd: 'prlimit',
      args: ['--pid', '4242', '--nofile=524288:524288'],
    });
    const res = await raiseNoFileLimit(exec, () => Promise.resolve(states.shift()!), 4242);
    exec.verify();
    assert.equal(res.before.soft, 1024);
    assert.equal(res.after.soft, 524288);
  });

  it('runs nothing when the soft limit already is the hard one', async () => {
    const exec = new FakeExecer();
    const res = await raiseNoFileLimit(exec, () => Promise.resolve({ soft: 20000, hard: 20000 }));
    assert.equal(res.skipped, 'soft = hard');
    assert.equal(exec.calls.length, 0);
  });

  it('reports a refused prlimit as an error', async () => {
    const exec = new FakeExecer().expect({
      cmd: 'prlimit',
      result: { code: 1, stderr: 'prlimit: failed to set the NOFILE resource limit' },
    });
    await assert.rejects(
      raiseNoFileLimit(exec, () => Promise.resolve({ soft: 1, hard: 2 })),
      /failed to set the NOFILE/,
    );
  });
});
