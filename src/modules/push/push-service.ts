import type { Database } from '../../data/database.js';
import { DependencyUnavailableError, NotFoundError, UnauthorizedError, ValidationError } from '../../lib/errors.js';
import { neverConnected } from '../../lib/never-connected.js';
import type { PushSubscription } from '../../generated/prisma/client.js';
import type { Tenant } from '../orgs/tenant.js';
import { parseWebhookUrl, resolveWebhookHost, UnsafeWebhookUrlError } from '../webhooks/webhook-url-guard.js';
import type { PushMessage, PushSettings, PushSubscriptionInput } from './push-schemas.js';

export interface PushOptions {
  /** The VAPID keys (RFC 8292) and subject; null when push is off. */
  vapid: { publicKey: string; privateKey: string; subject: string } | null;
  /** Whether push endpoints may be http or resolve to private addresses (development and tests only). */
  allowPrivate: boolean;
}

/** How long a push service keeps a notification for a device that is offline: a request waits little longer. */
const TTL_SECONDS = 3_600;
const SEND_TIMEOUT_MS = 10_000;

/** web-push, loaded on first send: a process whose organizations push nothing should not carry it. */
const webPush = async () => (await import('web-push')).default;

/** What became of one notification: delivered to the push service, or the subscription is gone (404/410) and was removed. */
export type PushOutcome = 'sent' | 'gone';

/** A failure that proves nothing was delivered (the push service answered, or no connection was made). */
export class PushRefused extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

/**
 * Members' devices that get Web Push notifications (see docs/members-and-channels.md): each
 * browser subscribes with the VAPID public key, and the push service's endpoint and keys are kept
 * per device. A notification only opens a request in the console, where deciding needs a session.
 */
export class PushService {
  constructor(
    private readonly db: Database,
    private readonly options: PushOptions,
  ) {}

  async settings(tenant: Tenant): Promise<PushSettings> {
    const devices = await this.db.pushSubscription.count({ where: { memberId: memberIdOf(tenant) } });
    return { publicKey: this.options.vapid?.publicKey ?? null, devices };
  }

  /** Keeps the device's subscription for the signed-in member; a device subscribed by another member before is now this one's. */
  async subscribe(tenant: Tenant, input: PushSubscriptionInput): Promise<PushSubscription> {
    if (!this.options.vapid) throw new DependencyUnavailableError('Web Push is off: VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are not set.');
    await this.assertReachable(input.endpoint).catch((error: unknown) => {
      if (error instanceof UnsafeWebhookUrlError) throw new ValidationError([{ path: 'endpoint', message: `endpoint ${error.message}` }]);
      throw error;
    });
    const fields = { orgId: tenant.orgId, memberId: memberIdOf(tenant), p256dh: input.keys.p256dh, auth: input.keys.auth };
    return this.db.pushSubscription.upsert({
      where: { endpoint: input.endpoint },
      create: { endpoint: input.endpoint, ...fields },
      update: fields,
    });
  }

  async unsubscribe(tenant: Tenant, endpoint: string): Promise<void> {
    const removed = await this.db.pushSubscription.deleteMany({ where: { endpoint, memberId: memberIdOf(tenant) } });
    if (removed.count === 0) throw new NotFoundError('This device does not receive notifications for you.');
  }

  /** The devices of these members. */
  devicesOf(memberIds: readonly string[]): Promise<PushSubscription[]> {
    return this.db.pushSubscription.findMany({ where: { memberId: { in: [...memberIds] } }, orderBy: { createdAt: 'asc' } });
  }

  get enabled(): boolean {
    return this.options.vapid !== null;
  }

  /**
   * Sends one notification, encrypted to the device's keys (aes128gcm, RFC 8291) and signed with
   * VAPID. A push service answering 404 or 410 has dropped the subscription: it is removed here.
   */
  async send(device: PushSubscription, message: PushMessage): Promise<PushOutcome> {
    const vapid = this.options.vapid;
    if (!vapid) throw new PushRefused('Web Push is off', null);
    await this.assertReachable(device.endpoint).catch((error: unknown) => {
      throw new PushRefused(`push endpoint refused: ${(error as Error).message}`, null);
    });
    // web-push encrypts and signs; the request itself goes out through fetch, which also speaks the
    // plain http of a local push service in development and tests.
    const request = (await webPush()).generateRequestDetails(
      { endpoint: device.endpoint, keys: { p256dh: device.p256dh, auth: device.auth } },
      JSON.stringify(message),
      { vapidDetails: vapid, TTL: TTL_SECONDS, urgency: 'high', contentEncoding: 'aes128gcm' },
    );
    let response: Response;
    try {
      response = await fetch(request.endpoint, {
        method: request.method,
        headers: request.headers as Record<string, string>,
        body: request.body ?? null,
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      });
    } catch (error) {
      const code = (error as { cause?: { code?: string } }).cause?.code ?? '';
      if (neverConnected(code)) throw new PushRefused(`the push service could not be reached (${code})`, null);
      throw error;
    }
    if (response.status === 404 || response.status === 410) {
      await this.db.pushSubscription.deleteMany({ where: { id: device.id } });
      return 'gone';
    }
    if (!response.ok) {
      throw new PushRefused(`the push service answered ${response.status}: ${(await response.text()).slice(0, 300)}`, response.status);
    }
    return 'sent';
  }

  /** A push endpoint is a URL the browser chose: the same guard as webhook URLs, https outside development and tests. */
  private async assertReachable(endpoint: string): Promise<void> {
    const url = parseWebhookUrl(endpoint);
    if (url.protocol !== 'https:' && !this.options.allowPrivate) throw new UnsafeWebhookUrlError('must use https');
    await resolveWebhookHost(url, { allowPrivate: this.options.allowPrivate });
  }
}

function memberIdOf(tenant: Tenant): string {
  if (tenant.principal.type !== 'session')
    throw new UnauthorizedError('Only a member signed in to the console can turn notifications on or off.');
  return tenant.principal.memberId;
}
