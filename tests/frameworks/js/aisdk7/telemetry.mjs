// The app's OpenTelemetry pipeline: OTLP/HTTP protobuf to <endpoint>/v1/traces.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { RESOURCE_ATTRIBUTES } from '../common.mjs';

export async function startTelemetry(args) {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes(RESOURCE_ATTRIBUTES),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${args.endpoint}/v1/traces` }))],
  });
  provider.register();
  return {
    shutdown: async () => {
      await provider.forceFlush();
      await provider.shutdown();
    },
  };
}
