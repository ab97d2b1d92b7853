export interface StreamedEvent {
  id: string | undefined;
  event: string;
  data: { type: string; approvalId: string; status: string; seq: number };
}

/** Reads a text/event-stream as a browser's EventSource would, collecting its messages until closed. */
export async function openStream(baseUrl: string, headers: Record<string, string>) {
  const abort = new AbortController();
  const response = await fetch(`${baseUrl}/v1/approvals/events`, { headers, signal: abort.signal });
  const messages: StreamedEvent[] = [];
  const reading = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        const blocks = buffer.split('\n\n');
        buffer = blocks.pop()!;
        for (const block of blocks) {
          const fields = Object.fromEntries(
            block
              .split('\n')
              .filter((line) => line && !line.startsWith(':'))
              .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
          );
          if (fields.event) messages.push({ id: fields.id, event: fields.event, data: JSON.parse(fields.data!) });
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    response,
    messages,
    /** Settles when the server ends the stream. */
    ended: reading,
    waitFor: async (predicate: (messages: StreamedEvent[]) => boolean, timeoutMs = 5000) => {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(messages)) {
        if (Date.now() > deadline)
          throw new Error(`stream did not get there: ${messages.length} messages, the last ${JSON.stringify(messages.slice(-3))}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: async () => {
      abort.abort();
      await reading;
    },
  };
}
