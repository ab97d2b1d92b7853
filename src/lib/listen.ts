import { once } from 'node:events';
import type { Server } from 'node:net';

/** The port is taken: the message is the one line a person needs. */
export class PortInUseError extends Error {
  override name = 'PortInUseError';

  constructor(readonly port: number) {
    super(`port ${port} is in use; set PORT=<another port> or stop the other process`);
  }
}

/** Listens on `port` of `host` (every interface without one); rejects with PortInUseError when it is taken. */
export async function listen(server: Server, port: number, host?: string): Promise<void> {
  server.listen({ port, host });
  try {
    await once(server, 'listening');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError(port);
    throw error;
  }
}
