// The app's OpenTelemetry pipeline per instrumentation: OTLP/HTTP protobuf to <endpoint>/v1/traces.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { RESOURCE_ATTRIBUTES, SERVICE_NAME } from '../common.mjs';

export async function startTelemetry(args) {
  const exporter = new OTLPTraceExporter({ url: `${args.endpoint}/v1/traces` });
  if (args.instrumentation === 'traceloop') {
    // OpenLLMetry-JS owns the SDK (NodeSDK) and the span processor that rewrites ai.* spans.
    const traceloop = await import('@traceloop/node-server-sdk');
    process.env.OTEL_RESOURCE_ATTRIBUTES = Object.entries(RESOURCE_ATTRIBUTES).map(([k, v]) => `${k}=${v}`).join(',');
    traceloop.initialize({
      appName: SERVICE_NAME,
      exporter,
      disableBatch: false,
      traceloopSyncEnabled: false,
      silenceInitializationMessage: true,
    });
    return { shutdown: () => traceloop.forceFlush() };
  }
  let processor = new BatchSpanProcessor(exporter);
  if (args.instrumentation === 'openinference') {
    const { OpenInferenceBatchSpanProcessor } = await import('@arizeai/openinference-vercel');
    processor = new OpenInferenceBatchSpanProcessor({ exporter });
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes(RESOURCE_ATTRIBUTES),
    spanProcessors: [processor],
  });
  provider.register();
  return {
    shutdown: async () => {
      await provider.forceFlush();
      await provider.shutdown();
    },
  };
}
