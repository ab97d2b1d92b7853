// The requests the first screen waits for are sent first: modules run in the order they are
// imported, so these two run before React's, and the session and (on the inbox) its first page are
// on their way while React starts and renders, instead of after it. (React loaded by a dynamic
// import after them, a second script, measured no faster in bench:inbox.)
import './lib/initial-session';
import { CONSOLE_BASE } from './lib/inbox-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { App } from './app';
import './styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <BrowserRouter basename={CONSOLE_BASE}>
      <App />
    </BrowserRouter>
  </StrictMode>,
);

// The service worker shows push notifications and opens their request (public/sw.js); it caches nothing.
if ('serviceWorker' in navigator) void navigator.serviceWorker.register('/console/sw.js', { scope: '/console/' }).catch(() => {});
