// The app's OpenTelemetry pipeline per instrumentation: OTLP/HTTP protobuf to <endpoint>/v1/traces.
import { context } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { RESOURCE_ATTRIBUTES, SERVICE_NAME } from '../common.mjs';

export async function startTelemetry(args) {
  const exporter = new OTLPTraceExporter({ url: `${args.endpoint}/v1/traces` });
  if (args.instrumentation === 'traceloop') {
    const traceloop = await import('@traceloop/node-server-sdk');
    const { OpenAI } = await import('openai');
    // The openai instrumentation replaces a stream's usage with its own tiktoken estimate unless
    // token enrichment is off; off, the LangChain span's usage (the server's) is the call's.
    process.env.TRACELOOP_ENRICH_TOKENS = 'false';
    process.env.OTEL_RESOURCE_ATTRIBUTES = Object.entries(RESOURCE_ATTRIBUTES).map(([k, v]) => `${k}=${v}`).join(',');
    traceloop.initialize({
      appName: SERVICE_NAME,
      exporter,
      traceloopSyncEnabled: false,
      silenceInitializationMessage: true,
      instrumentModules: { openAI: OpenAI },
    });
    return {
      withSession: (id, fn) => traceloop.withAssociationProperties({ session_id: id }, fn),
      retrievalStep: (fn) => traceloop.withTask({ name: 'retrieve_documents' }, fn),
      shutdown: () => traceloop.forceFlush(),
    };
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes(RESOURCE_ATTRIBUTES),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  provider.register();
  const { LangChainInstrumentation } = await import('@arizeai/openinference-instrumentation-langchain');
  const CallbackManagerModule = await import('@langchain/core/callbacks/manager');
  new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);
  const { setSession } = await import('@arizeai/openinference-core');
  return {
    withSession: (id, fn) => context.with(setSession(context.active(), { sessionId: id }), fn),
    retrievalStep: (fn) => fn(),
    shutdown: async () => {
      await provider.forceFlush();
      await provider.shutdown();
    },
  };
}
