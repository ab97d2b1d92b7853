import { z } from 'zod';

const base64url = (field: string, bytes: number) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, `${field} must be base64url`)
    .refine((value) => Buffer.from(value, 'base64url').length === bytes, `${field} must be ${bytes} bytes`);

/** A browser's PushSubscription, as its toJSON() gives it. */
export const pushSubscriptionInputSchema = z
  .object({
    endpoint: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .meta({ description: "The push service's URL for this device, as the browser gave it." }),
    expirationTime: z.number().nullable().optional(),
    keys: z.strictObject({
      p256dh: base64url('keys.p256dh', 65).meta({ description: "The device's P-256 public key (uncompressed)." }),
      auth: base64url('keys.auth', 16).meta({ description: 'The authentication secret shared with the device.' }),
    }),
  })
  .meta({ id: 'PushSubscriptionInput' });
export type PushSubscriptionInput = z.output<typeof pushSubscriptionInputSchema>;

export const pushSubscriptionRemovalSchema = z
  .strictObject({ endpoint: z.string().min(1).max(2000) })
  .meta({ id: 'PushSubscriptionRemoval' });

export const pushSettingsSchema = z
  .object({
    publicKey: z
      .string()
      .nullable()
      .meta({ description: "The server's VAPID public key (applicationServerKey); null when this service sends no push." }),
    devices: z.number().int().meta({ description: 'How many devices of the signed-in member receive notifications.' }),
  })
  .meta({ id: 'PushSettings' });
export type PushSettings = z.output<typeof pushSettingsSchema>;

export const pushSubscribedSchema = z.object({ id: z.uuid(), createdAt: z.iso.datetime() }).meta({ id: 'PushSubscribed' });

/** What a notification carries to the service worker: never the request's payload, only where to decide it. */
export interface PushMessage {
  title: string;
  body: string;
  /** The console page of the request. */
  url: string;
  /** One notification per request on a device: a revision replaces the earlier one. */
  tag: string;
}
