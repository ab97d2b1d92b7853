import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { App } from './app';
import { CONSOLE_BASE } from './lib/inbox-query';

/** Starts React in `container`: the part of the console the entry script (main.tsx) loads once its requests are sent. */
export function renderConsole(container: HTMLElement): void {
  createRoot(container).render(
    <StrictMode>
      <BrowserRouter basename={CONSOLE_BASE}>
        <App />
      </BrowserRouter>
    </StrictMode>,
  );
}
