// The console's service worker (see docs/members-and-channels.md): it shows the notification of a
// request waiting for the member's decision, and a click opens the request in the console, where
// deciding needs the member's session. It caches nothing: the console is always the server's.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let message;
  try {
    message = event.data ? event.data.json() : null;
  } catch {
    message = null;
  }
  if (!message || typeof message.title !== 'string' || typeof message.url !== 'string') return;
  // Only console pages of this origin are opened from a notification.
  const url = new URL(message.url, self.location.origin);
  if (url.origin !== self.location.origin || !url.pathname.startsWith('/console/')) return;
  event.waitUntil(
    self.registration.showNotification(message.title, {
      body: message.body,
      tag: message.tag,
      data: { url: url.href },
      icon: '/console/icon-192.png',
      badge: '/console/icon-192.png',
      requireInteraction: true,
      actions: [{ action: 'open', title: 'Open to decide' }],
    }),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = event.notification.data && event.notification.data.url;
  if (typeof url !== 'string') return;
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const console = windows.find((client) => new URL(client.url).pathname.startsWith('/console/'));
      if (console) {
        const opened = await console.navigate(url);
        await (opened ?? console).focus().catch(() => {});
        return;
      }
      await self.clients.openWindow(url);
    })(),
  );
});
