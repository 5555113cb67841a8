// What the JS capture apps have in common (Node built-ins only: each stack has its own
// node_modules, so this file imports no package). See README.md for the app contract.
//
// An app is one `app.mjs` per stack: it sets up its own telemetry and framework, and hands
// `conversation()` a function that answers one question inside the app's `POST /chat` span.
// Per turn it prints one *facts* line on stdout: what the app asked, retrieved and showed, plus
// the fake OpenAI server's record of every model call of the turn. The harness turns facts into
// truth lines (tests/frameworks/truth.py); rag-monitor's output is never an input.

import { readFileSync } from 'node:fs';

export const SERVICE_NAME = 'rag-demo-app';
export const SERVICE_VERSION = '1.4.2';
export const CHAT_MODEL = 'gpt-4o-mini';
export const API_KEY = 'sk-test-not-a-real-key';
export const APP_TRACER = 'rag_demo_app';
export const ROOT_SPAN_NAME = 'POST /chat';
export const ROOT_SPAN_ATTRIBUTES = {
  'http.request.method': 'POST',
  'http.route': '/chat',
  'url.path': '/chat',
  'url.scheme': 'http',
  'server.address': '127.0.0.1',
  'server.port': 8080,
};
export const RESOURCE_ATTRIBUTES = {
  'service.name': SERVICE_NAME,
  'service.version': SERVICE_VERSION,
  'deployment.environment.name': 'test',
};
// The system prompt of the tool-calling apps: retrieval is the search_docs tool.
export const TOOL_INSTRUCTIONS =
  'You are the Acme Cloud Backup support assistant. Always call the search_docs tool to look the ' +
  'question up in the help center, then answer using only the documents it returns. Cite document ' +
  "ids in square brackets. If the documents do not contain the answer, say you don't know.";
export const SEARCH_TOOL_DESCRIPTION = 'Search the Acme Cloud Backup help center; returns the best matching documents.';

/** The harness contract's command line. `--list` prints the combinations and exits. */
export function parseArgs(stack, combinations, argv = process.argv.slice(2)) {
  const args = { stack, endpoint: 'http://127.0.0.1:4318', conversationId: `conv-${stack}` };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    const value = () => argv[++i];
    if (key === '--list') args.list = true;
    else if (key === '--instrumentation') args.instrumentation = value();
    else if (key === '--scenario') args.scenario = value();
    else if (key === '--endpoint') args.endpoint = value().replace(/\/$/, '');
    else if (key === '--openai-base-url') args.openaiBaseUrl = value();
    else if (key === '--conversation-id') args.conversationId = value();
    else if (key === '--fixture') args.fixture = value();
    else throw new Error(`unknown argument ${key}`);
  }
  if (args.list) {
    process.stdout.write(JSON.stringify(combinations) + '\n');
    process.exit(0);
  }
  args.instrumentation ??= combinations[0][0];
  args.scenario ??= combinations[0][1];
  if (!combinations.some(([i, s]) => i === args.instrumentation && s === args.scenario)) {
    throw new Error(`unsupported combination ${args.instrumentation}/${args.scenario}`);
  }
  if (!args.openaiBaseUrl || !args.fixture) throw new Error('--openai-base-url and --fixture are required');
  const fixture = JSON.parse(readFileSync(args.fixture, 'utf8'));
  args.knowledgeBase = fixture.knowledge_base;
  args.questions = fixture.questions;
  return args;
}

/** The deterministic keyword retriever of tests/support/rag_app.py, over the fixture's documents. */
export function retrieve(knowledgeBase, query, topK = 3) {
  const words = new Set((query.toLowerCase().match(/[a-z0-9]+/g) ?? []));
  const ranked = [];
  knowledgeBase.forEach((doc, order) => {
    const hits = doc.keywords.filter((k) => words.has(k)).length;
    if (hits) ranked.push({ hits, order, doc });
  });
  ranked.sort((a, b) => b.hits - a.hits || a.order - b.order);
  return ranked.slice(0, topK).map(({ hits, doc }, rank) => ({
    id: doc.id,
    title: doc.title,
    content: doc.content,
    score: Math.round((Math.min(0.97, 0.55 + 0.1 * hits) - 0.03 * rank) * 10000) / 10000,
  }));
}

/** The knowledge-base search as the app's tool; remembers the turn's queries and documents. */
export class SearchTool {
  constructor(knowledgeBase) {
    this.knowledgeBase = knowledgeBase;
    this.reset();
  }
  search(query) {
    const documents = retrieve(this.knowledgeBase, query);
    this.queries.push(query);
    this.documents.push(...documents);
    return documents;
  }
  reset() {
    this.queries = [];
    this.documents = [];
  }
}

/** The fake OpenAI server's call log (GET /_test/chat-calls): the calls of the turn just run. */
export class ChatCallLog {
  constructor(openaiBaseUrl) {
    this.url = openaiBaseUrl.replace(/\/$/, '').replace(/\/v1$/, '') + '/_test/chat-calls';
    this.seen = null;
  }
  async #fetch() {
    const resp = await fetch(this.url);
    return resp.json();
  }
  async start() {
    this.seen = (await this.#fetch()).length;
  }
  async sinceLast() {
    const calls = await this.#fetch();
    const fresh = calls.slice(this.seen);
    this.seen = calls.length;
    return fresh;
  }
}

/** The system message of the turn's answering (last) model call, as the fake server got it. */
export function systemPromptOf(calls) {
  const messages = calls.length ? calls[calls.length - 1].messages ?? [] : [];
  return messages.find((m) => m.role === 'system')?.content ?? null;
}

/**
 * The app's turns: `args.questions` in order, each `await answer(question, history)` inside the
 * `POST /chat` SERVER span made current by `withRootSpan(fn)` (which returns the trace id and
 * fn's result), then one facts line. `answer` returns the text the app shows.
 */
export async function conversation(args, search, withRootSpan, answer) {
  const calls = new ChatCallLog(args.openaiBaseUrl);
  await calls.start();
  let history = [];
  for (const question of args.questions) {
    search.reset();
    const { traceId, result: text } = await withRootSpan(() => answer(question, history));
    const turnCalls = await calls.sinceLast();
    const facts = {
      trace_id: traceId,
      question,
      answer: text,
      history,
      system_prompt: systemPromptOf(turnCalls),
      documents: search.documents,
      retrieval_query: search.queries[0] ?? null,
      calls: turnCalls,
    };
    process.stdout.write(JSON.stringify(facts) + '\n');
    history = [...history, { role: 'user', content: question }, { role: 'assistant', content: text }];
  }
}

/** `withRootSpan` for an OpenTelemetry API `tracer` (the app's own scope, rag_demo_app). */
export function rootSpanRunner(tracer, SpanKind, extraAttributes = {}) {
  return (fn) =>
    tracer.startActiveSpan(
      ROOT_SPAN_NAME,
      { kind: SpanKind.SERVER, attributes: { ...ROOT_SPAN_ATTRIBUTES, ...extraAttributes } },
      async (span) => {
        try {
          const result = await fn();
          span.setAttribute('http.response.status_code', 200);
          return { traceId: span.spanContext().traceId, result };
        } finally {
          span.end();
        }
      },
    );
}
