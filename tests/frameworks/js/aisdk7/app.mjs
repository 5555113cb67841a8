// AI SDK 7 RAG chat app: generateText / streamText with a search_docs tool (multi-step: the
// model calls the tool, then answers), two turns of one conversation, against the fake OpenAI
// server through @ai-sdk/openai (chat completions). AI SDK 7 declares Node >= 22; it runs on the
// machine's Node 20 (npm warns EBADENGINE). Telemetry is an integration registered once:
//   otel    @ai-sdk/otel's OpenTelemetry (GenAI semantic conventions), runtimeContext: true
//   legacy  @ai-sdk/otel's LegacyOpenTelemetry (the ai.* spans of AI SDK <= 6)
// The conversation id travels in the call's runtime context ({ sessionId }), included in telemetry
// with telemetry.includeRuntimeContext (AI SDK 7 has no telemetry metadata).
import { SpanKind, trace } from '@opentelemetry/api';
import { createOpenAI } from '@ai-sdk/openai';
import { LegacyOpenTelemetry, OpenTelemetry } from '@ai-sdk/otel';
import { generateText, registerTelemetry, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import {
  API_KEY, APP_TRACER, CHAT_MODEL, SEARCH_TOOL_DESCRIPTION, SERVICE_VERSION, TOOL_INSTRUCTIONS, SearchTool,
  conversation, parseArgs, rootSpanRunner,
} from '../common.mjs';
import { startTelemetry } from './telemetry.mjs';

const COMBINATIONS = ['otel', 'legacy'].flatMap((i) => [[i, 'generate'], [i, 'stream']]);
const args = parseArgs('aisdk7', COMBINATIONS);
const telemetry = await startTelemetry(args);
registerTelemetry(args.instrumentation === 'otel' ? new OpenTelemetry({ runtimeContext: true }) : new LegacyOpenTelemetry());
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
    model: openai.chat(CHAT_MODEL),
    system: TOOL_INSTRUCTIONS,
    messages: [...history, { role: 'user', content: question }],
    tools,
    stopWhen: stepCountIs(4),
    runtimeContext: { sessionId: args.conversationId },
    telemetry: { functionId: 'support-chat', includeRuntimeContext: { sessionId: true } },
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
