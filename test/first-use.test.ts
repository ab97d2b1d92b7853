import { describe, expect, it } from 'vitest';
import { onFirstUse } from '../src/lib/first-use.js';

describe('onFirstUse', () => {
  it('makes once for every call, even concurrent ones', async () => {
    let makes = 0;
    const value = onFirstUse(async () => ++makes);
    expect(await Promise.all([value(), value(), value()])).toEqual([1, 1, 1]);
    expect(await value()).toBe(1);
    expect(makes).toBe(1);
  });

  it('makes again after a failure instead of keeping it', async () => {
    let makes = 0;
    const value = onFirstUse(async () => {
      makes += 1;
      if (makes === 1) throw new Error('not installed');
      return 'built';
    });
    await expect(value()).rejects.toThrow('not installed');
    expect(await value()).toBe('built');
    expect(await value()).toBe('built');
    expect(makes).toBe(2);
  });
});
