/**
 * Which of the integers near the highest one added were added: one bit each for the `size` up to
 * and including the highest, so a long-lived reader remembers what it did at a fixed small cost
 * (a Set of as many numbers is two orders of magnitude larger). Below the window nothing is
 * remembered: `has` answers false there.
 */
export class SeqWindow {
  private readonly bits: Uint8Array;
  private top: number | null = null;

  /** `size`: a multiple of 8. */
  constructor(private readonly size: number) {
    this.bits = new Uint8Array(size / 8);
  }

  has(seq: number): boolean {
    if (this.top === null || seq > this.top || seq <= this.top - this.size) return false;
    const bit = seq % this.size;
    return (this.bits[bit >> 3]! & (1 << (bit & 7))) !== 0;
  }

  add(seq: number): void {
    if (this.top === null || seq > this.top) {
      // The slots the window moves onto held seqs `size` below: they are forgotten.
      const from = this.top === null ? seq : Math.max(this.top + 1, seq - this.size + 1);
      for (let moved = from; moved <= seq; moved++) {
        const bit = moved % this.size;
        this.bits[bit >> 3]! &= ~(1 << (bit & 7));
      }
      this.top = seq;
    } else if (seq <= this.top - this.size) {
      return;
    }
    const bit = seq % this.size;
    this.bits[bit >> 3]! |= 1 << (bit & 7);
  }
}
