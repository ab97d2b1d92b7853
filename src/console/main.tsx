import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { App } from './app';
import './styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <BrowserRouter basename="/console">
      <App />
    </BrowserRouter>
  </StrictMode>,
);

// The service worker shows push notifications and opens their request (public/sw.js); it caches nothing.
if ('serviceWorker' in navigator) void navigator.serviceWorker.register('/console/sw.js', { scope: '/console/' }).catch(() => {});
