import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { App } from './app';
import { CONSOLE_BASE } from './lib/inbox-query';
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
