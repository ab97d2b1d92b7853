import { describe, expect, it } from 'vitest';
import { SeqWindow } from '../src/lib/seq-window.js';

describe('SeqWindow', () => {
  it('remembers what was added, in any order, and nothing else', () => {
    const window = new SeqWindow(16);
    expect(window.has(5)).toBe(false);
    for (const seq of [5, 9, 7]) window.add(seq);
    expect([4, 5, 6, 7, 8, 9, 10].map((seq) => window.has(seq))).toEqual([false, true, false, true, false, true, false]);
  });

  it('forgets what falls out of the window, and a slot reused by a seq `size` above holds only that one', () => {
    const window = new SeqWindow(16);
    window.add(3);
    window.add(18); // 3 is now 15 below the highest: still in the window
    expect(window.has(3)).toBe(true);
    window.add(19); // 3 is 16 below: out
    expect(window.has(3)).toBe(false);
    // 35 takes the slot of 19 (and of 3): only 35 is there now, and 19 is out of the window.
    window.add(35);
    expect([3, 19, 35].map((seq) => window.has(seq))).toEqual([false, false, true]);
    // A seq that comes back within the window after a jump was not sent: the jump cleared its slot.
    expect(window.has(34)).toBe(false);
  });

  it('adds nothing below its window', () => {
    const window = new SeqWindow(8);
    window.add(100);
    window.add(92);
    expect(window.has(92)).toBe(false);
    window.add(93);
    expect(window.has(93)).toBe(true);
  });
});
