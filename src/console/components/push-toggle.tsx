import { useEffect, useState } from 'react';
import { api } from '../api';
import { ProblemMessage } from './problem-message';
import { useAction } from '../hooks/use-resource';

/** Whether this browser can receive Web Push at all (a service worker, the Push API, notifications). */
const supported = () => 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;

/** The VAPID key, base64url, as the bytes PushManager.subscribe takes. */
function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const base64 = base64url.replace(/-/g, '+').replace(/_/g, '/');
  const binary = atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}

/**
 * Notifications on this device (see docs/members-and-channels.md): a subscription of this browser
 * with the server's VAPID key, kept per device. A notification only opens the request; deciding
 * stays in the signed-in console.
 */
export function PushToggle() {
  const [state, setState] = useState<'loading' | 'unsupported' | 'off-server' | 'on' | 'off'>('loading');
  const [publicKey, setPublicKey] = useState<string | null>(null);

  useEffect(() => {
    if (!supported()) return setState('unsupported');
    void (async () => {
      const settings = await api.session.pushSettings();
      if (!settings.publicKey) return setState('off-server');
      setPublicKey(settings.publicKey);
      const registration = await navigator.serviceWorker.ready;
      setState((await registration.pushManager.getSubscription()) ? 'on' : 'off');
    })().catch(() => setState('off'));
  }, []);

  const toggle = useAction(async (enable: boolean) => {
    const registration = await navigator.serviceWorker.ready;
    const current = await registration.pushManager.getSubscription();
    if (!enable) {
      if (current) {
        await api.session.removePushDevice(current.endpoint).catch(() => {});
        await current.unsubscribe();
      }
      return setState('off');
    }
    if ((await Notification.requestPermission()) !== 'granted') {
      throw new Error('Notifications are blocked for this site in the browser; allow them there, then turn this on.');
    }
    const subscription =
      current ?? (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey!) }));
    const json = subscription.toJSON();
    await api.session.addPushDevice({ endpoint: subscription.endpoint, keys: { p256dh: json.keys!.p256dh!, auth: json.keys!.auth! } });
    setState('on');
  });

  if (state === 'loading') return <p role="status">Checking notifications on this device…</p>;
  if (state === 'unsupported')
    return <p>This browser cannot receive notifications. On an iPhone, add the console to the Home Screen first.</p>;
  if (state === 'off-server') return <p>This server sends no notifications (Web Push is not set up).</p>;
  return (
    <>
      <label className="inline">
        <input
          type="checkbox"
          checked={state === 'on'}
          disabled={toggle.pending}
          onChange={(event) => void toggle.run(event.target.checked)}
        />
        Notify me on this device when a request waits for my decision
      </label>
      <ProblemMessage error={toggle.error} />
    </>
  );
}
