// LangChain.js RAG chain: a retriever over the help center, a chat prompt with the documents in
// the system message and the earlier turns as history, ChatOpenAI (chat completions) against the
// fake OpenAI server, a string output parser. Two turns of one conversation; `generate` invokes
// the chain, `stream` streams it. Instrumentations:
//   openinference  @arizeai/openinference-instrumentation-langchain; session via setSession()
//   traceloop      OpenLLMetry-JS (@traceloop/node-server-sdk) with its openai instrumentation
//                  on too (instrumentModules.openAI); session via withAssociationProperties();
//                  its LangChain instrumentation traces no retriever, so the retrieval runs in
//                  traceloop.withTask() (a task span whose output is the documents)
import { SpanKind, context, trace } from '@opentelemetry/api';
import { BaseRetriever } from '@langchain/core/retrievers';
import { Document } from '@langchain/core/documents';
import { ChatPromptTemplate, MessagesPlaceholder } from '@langchain/core/prompts';
import { StringOutputParser } from '@langchain/core/output_parsers';
import { RunnablePassthrough, RunnableSequence } from '@langchain/core/runnables';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import {
  API_KEY, APP_TRACER, CHAT_MODEL, SERVICE_VERSION, SearchTool, conversation, parseArgs, rootSpanRunner,
} from '../common.mjs';
import { startTelemetry } from './telemetry.mjs';

const COMBINATIONS = ['openinference', 'traceloop'].flatMap((i) => [[i, 'generate'], [i, 'stream']]);
const args = parseArgs('langchainjs', COMBINATIONS);
const telemetry = await startTelemetry(args);

const SYSTEM_TEMPLATE =
  "You are the Acme Cloud Backup support assistant. Answer the user's question using only the " +
  'documents below. Cite document ids in square brackets. If the documents do not contain the ' +
  "answer, say you don't know.\n\n{documents}";

const search = new SearchTool(args.knowledgeBase);

class HelpCenterRetriever extends BaseRetriever {
  lc_namespace = ['rag_demo_app', 'retrievers'];
  async _getRelevantDocuments(query) {
    // id and score also in metadata: LangChain's Document has no score field.
    return telemetry.retrievalStep(() => search.search(query).map((d) => new Document({
      id: d.id, pageContent: d.content, metadata: { id: d.id, title: d.title, score: d.score },
    })));
  }
}

const formatDocuments = (docs) => docs.map((d) => `[${d.metadata.id}] ${d.metadata.title}\n${d.pageContent}`).join('\n\n');
const prompt = ChatPromptTemplate.fromMessages([
  ['system', SYSTEM_TEMPLATE],
  new MessagesPlaceholder('history'),
  ['human', '{question}'],
]);
const model = new ChatOpenAI({
  model: CHAT_MODEL, apiKey: API_KEY, configuration: { baseURL: args.openaiBaseUrl }, streamUsage: true,
});
const retriever = new HelpCenterRetriever();
const chain = RunnableSequence.from([
  RunnablePassthrough.assign({ documents: (input) => retriever.invoke(input.question).then(formatDocuments) }),
  prompt,
  model,
  new StringOutputParser(),
]);

async function answer(question, history) {
  const input = {
    question,
    history: history.map((m) => (m.role === 'user' ? new HumanMessage(m.content) : new AIMessage(m.content))),
  };
  if (args.scenario === 'stream') {
    let text = '';
    for await (const chunk of await chain.stream(input)) text += chunk;
    return text;
  }
  return chain.invoke(input);
}

const tracer = trace.getTracer(APP_TRACER, SERVICE_VERSION);
const inRoot = rootSpanRunner(tracer, SpanKind);
// The session wraps the whole request, as an app's middleware would set it.
const inSession = (fn) => telemetry.withSession(args.conversationId, () => inRoot(fn));
await conversation(args, search, inSession, answer);
await telemetry.shutdown();
