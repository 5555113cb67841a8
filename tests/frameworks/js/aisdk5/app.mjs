// AI SDK 5 RAG chat app: generateText / streamText with a search_docs tool (multi-step: the
// model calls the tool, then answers), two turns of one conversation, against the fake OpenAI
// server through @ai-sdk/openai (the Responses API). Instrumentation: the AI SDK's own telemetry,
// experimental_telemetry { isEnabled, metadata: { conversationId } } (AI SDK 6's app uses sessionId).
import { SpanKind, trace } from '@opentelemetry/api';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import {
  API_KEY, APP_TRACER, CHAT_MODEL, SEARCH_TOOL_DESCRIPTION, SERVICE_VERSION, TOOL_INSTRUCTIONS, SearchTool,
  conversation, parseArgs, rootSpanRunner,
} from '../common.mjs';
import { startTelemetry } from './telemetry.mjs';

const COMBINATIONS = ['native'].flatMap((i) => [[i, 'generate'], [i, 'stream']]);
const args = parseArgs('aisdk5', COMBINATIONS);
const telemetry = await startTelemetry(args);
const openai = createOpenAI({ baseURL: args.openaiBaseUrl, apiKey: API_KEY });
const search = new SearchTool(args.knowledgeBase);
const tools = {
  search_docs: tool({
    description: SEARCH_TOOL_DESCRIPTION,
    inputSchema: z.object({ query: z.string().describe('what to look up') }),
    execute: async ({ query }) => search.search(query),
  }),
};

async function answer(question, history) {
  const request = {
    model: openai(CHAT_MODEL), // the Responses API (AI SDK 5's default for OpenAI)
    system: TOOL_INSTRUCTIONS,
    messages: [...history, { role: 'user', content: question }],
    tools,
    stopWhen: stepCountIs(4),
    experimental_telemetry: {
      isEnabled: true,
      functionId: 'support-chat',
      metadata: { conversationId: args.conversationId },
    },
  };
  if (args.scenario === 'stream') {
    const result = streamText(request);
    let text = '';
    for await (const delta of result.textStream) text += delta;
    return text;
  }
  return (await generateText(request)).text;
}

const tracer = trace.getTracer(APP_TRACER, SERVICE_VERSION);
await conversation(args, search, rootSpanRunner(tracer, SpanKind), answer);
await telemetry.shutdown();
