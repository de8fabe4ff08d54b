import { ROOT_CONTEXT, trace, type Context } from "@opentelemetry/api";
import { parseTraceParent } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider, type SpanExporter } from "@opentelemetry/sdk-trace";
import { VERSION } from "../version.ts";
import type { Tracing } from "./tracing.ts";

export interface TracingOptions {
  /** The OTLP/HTTP traces URL (`…/v1/traces`). */
  url: string;
  serviceName: string;
  /** Tests: export here instead (an in-memory exporter). */
  exporter?: SpanExporter;
}

/** The tracing of one process, exporting over OTLP/HTTP (JSON) in batches. */
export function createTracing(options: TracingOptions): Tracing {
  const exporter = options.exporter ?? new OTLPTraceExporter({ url: options.url });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName, "service.version": VERSION }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1_000 })],
  });
  const tracer = provider.getTracer("hooklane", VERSION);
  const contextOf = (traceparent: string | null | undefined): Context => {
    const parent = traceparent ? parseTraceParent(traceparent) : null;
    return parent ? trace.setSpanContext(ROOT_CONTEXT, { ...parent, isRemote: true }) : ROOT_CONTEXT;
  };
  return {
    start: (name, parent, spanOptions = {}) => tracer.startSpan(name, spanOptions, contextOf(parent)),
    traceparentOf(span) {
      const { traceId, spanId, traceFlags } = span.spanContext();
      return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, "0")}`;
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
