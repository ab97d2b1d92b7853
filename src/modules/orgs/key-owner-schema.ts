import { z } from 'zod';

/**
 * Whose a key made with POST /v1/keys is (docs/members-and-channels.md#principals): a member's
 * (`user`) or a service key's (`key`). A service key (made by the CLI) has none: it is its own
 * principal. Shown on keys and beside a key that decided (`decidedBy.owner`).
 */
export const keyOwnerSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('user'), id: z.uuid().meta({ description: 'The member.' }) }),
    z.object({ type: z.literal('key'), id: z.uuid().meta({ description: 'The service key (made by the CLI).' }) }),
  ])
  .meta({ id: 'KeyOwner' });
export type KeyOwner = z.output<typeof keyOwnerSchema>;
