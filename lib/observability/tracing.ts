import { SpanKind, SpanStatusCode, type Attributes, type Span, type TimeInput } from "@opentelemetry/api";

export { SpanKind, SpanStatusCode, type Span };

/**
 * One event's way through the product as OpenTelemetry spans: the API
 * request, its publish, the route, each claim and each attempt, in one trace
 * that crosses processes in the event itself (the W3C `traceparent` of its
 * publish span, kept in the route message and on each dispatch). Built only
 * when an OTLP endpoint is configured; without one there is no Tracing and
 * callers do nothing at all, not even read a header. This module needs only
 * the API package; the SDK (`tracing-sdk.ts`) is loaded when tracing is on.
 *
 * Spans are started with an explicit parent rather than a context manager:
 * a lane worker holds many events' traces at once, and none of its work
 * belongs to whatever happened to run before it.
 */
export interface Tracing {
  /** A span of `name` under the `traceparent` given (a new trace when it is absent or not valid W3C). */
  start(
    name: string,
    parent: string | null | undefined,
    options?: { kind?: SpanKind; attributes?: Attributes; startTime?: TimeInput },
  ): Span;
  /** The W3C `traceparent` that makes the next hop a child of `span`. */
  traceparentOf(span: Span): string;
  /** Exports every span ended so far (tests; a process ending). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** A span's trace id, for log lines: what joins a log line to its trace. */
export function traceIdOf(span: Span): string {
  return span.spanContext().traceId;
}

/** Ends `span` as failed when `error` is given: its class, never its message (it may hold what a subscriber sent). */
export function endSpan(span: Span, errorType?: string | null, endTime?: TimeInput): void {
  if (errorType) {
    span.setAttribute("error.type", errorType);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end(endTime);
}

/** Records a span of work already done (from `startTime` to `endTime`) under `parent`: a step's share of one event. */
export function recordSpan(
  tracing: Tracing,
  name: string,
  parent: string,
  times: { start: TimeInput; end: TimeInput },
  attributes: Attributes,
  kind: SpanKind = SpanKind.INTERNAL,
): void {
  tracing.start(name, parent, { kind, attributes, startTime: times.start }).end(times.end);
}
