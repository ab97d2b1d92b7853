import { randomUUID } from 'node:crypto';
import { Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { MockLanguageModelV4 } from 'ai/test';

/** A tool call a scripted model makes on its first turn. */
export interface ScriptedCall {
  toolName: string;
  input: Record<string, unknown>;
}

/** The usage a scripted model reports: one token each way. */
export const modelUsage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/**
 * A model of the AI SDK that makes `calls` on its first step and, on the next, answers with the
 * tools' results it was sent, as JSON text: what the model read is what the test reads. Each call
 * has a fresh id, as a provider's would. `onResults` is told when the results reach the model.
 */
export function scriptedAiModel(calls: ScriptedCall[], onResults?: () => void): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1)!;
      if (last.role !== 'tool') {
        return {
          content: calls.map(({ toolName, input }) => ({
            type: 'tool-call',
            toolCallId: `call_${randomUUID()}`,
            toolName,
            input: JSON.stringify(input),
          })),
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage: modelUsage,
          warnings: [],
        };
      }
      onResults?.();
      const results = last.content.flatMap((part) => (part.type === 'tool-result' ? [part.output] : []));
      return {
        content: [{ type: 'text', text: JSON.stringify(results) }],
        finishReason: { unified: 'stop', raw: undefined },
        usage: modelUsage,
        warnings: [],
      };
    },
  });
}

/**
 * A model of the OpenAI Agents SDK, scripted the same way: `calls` on its first turn, then the
 * tools' outputs it was sent (a rejection's message among them), as JSON text.
 */
export class ScriptedAgentsModel implements Model {
  constructor(
    private readonly calls: ScriptedCall[],
    /** Told when the tools' results reach the model. */
    private readonly onResults?: () => void,
  ) {}

  async getResponse({ input }: ModelRequest): Promise<ModelResponse> {
    const items = typeof input === 'string' ? [] : input;
    const results = items.flatMap((item) => (item.type === 'function_call_result' ? [item.output] : []));
    if (results.length === 0) {
      return {
        usage: new Usage(),
        output: this.calls.map(({ toolName, input: args }) => ({
          type: 'function_call',
          callId: `call_${randomUUID()}`,
          name: toolName,
          arguments: JSON.stringify(args),
          status: 'completed',
        })),
      };
    }
    this.onResults?.();
    const text = JSON.stringify(
      results.map((output) => (typeof output === 'object' && output !== null && 'text' in output ? output.text : output)),
    );
    return {
      usage: new Usage(),
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }],
    };
  }

  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('The scripted model answers only getResponse');
  }
}
