/**
 * The caller of a long-running operation (a long-poll's client, say), as far as the operation
 * needs to know it: whether it went away, so that waiting for it can stop.
 */
export interface Caller {
  readonly gone: boolean;
  /** Calls `listener` when the caller goes away; never if it is gone already (check `gone` first). */
  onGone(listener: () => void): void;
}
