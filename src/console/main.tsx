// The entry script: a few kilobytes without React. It sends the requests the first screen waits
// for (the session, and the inbox's first page when the console opens on the inbox) and only then
// loads React and the app, so that those requests run while the browser compiles and starts the
// larger script instead of after it. The build preloads that script beside this one (vite.config.ts).
import './lib/initial-session';
import './lib/inbox-query';
import './styles.css';

void import('./render').then(({ renderConsole }) => renderConsole(document.getElementById('root')!));

// The service worker shows push notifications and opens their request (public/sw.js); it caches nothing.
if ('serviceWorker' in navigator) void navigator.serviceWorker.register('/console/sw.js', { scope: '/console/' }).catch(() => {});
