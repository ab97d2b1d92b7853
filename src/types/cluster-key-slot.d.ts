/** The hash slot (0 to 16383) of a Redis key, as Redis Cluster computes it (hash tags included). */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string | Buffer): number;
}
