"""A RAG app instrumented with OpenTelemetry and OpenInference attributes, exporting to ragpulse over OTLP/HTTP.

    .venv/bin/python examples/otel_app.py --server http://127.0.0.1:8080 [--api-key KEY]

Nothing here is ragpulse-specific except the endpoint: an app already traced for Phoenix, Langfuse or Arize points
its OTLP exporter at `<server>/v1/otlp/v1/traces` (or sets OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with its Bearer key.
Each request prints its OpenTelemetry trace id, which is also its ragpulse trace id: GET /v1/traces/{trace_id}.
"""

from __future__ import annotations

import argparse
import os

from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

CORPUS = {
    "doc-reset": "Hold the reset button for ten seconds to restore the thermostat's factory settings.",
    "doc-wifi": "The thermostat pairs with 2.4 GHz Wi-Fi networks only; 5 GHz networks are not supported.",
    "doc-warranty": "The Nimbus Thermostat carries a two-year limited warranty from the date of purchase.",
}
KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND


def retrieve(question: str) -> list[tuple[str, str]]:
    """A toy retriever: documents sharing words with the question, best first."""
    words = set(question.lower().split())
    ranked = sorted(CORPUS.items(), key=lambda item: -len(words & set(item[1].lower().split())))
    return ranked[:2]


def answer(tracer, question: str) -> str:  # noqa: ANN001 - an OpenTelemetry Tracer
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
        root.set_attribute(SpanAttributes.INPUT_VALUE, question)
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
            docs = retrieve(question)
            for i, (doc_id, text) in enumerate(docs):
                prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}"
                span.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_ID}", doc_id)
                span.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_CONTENT}", text)
        with tracer.start_as_current_span("generate") as span:
            span.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
            span.set_attribute(SpanAttributes.LLM_MODEL_NAME, "toy-llm")
            reply = docs[0][1]  # a toy generator: repeat the best passage
            span.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_PROMPT, sum(len(t.split()) for _, t in docs) + 20)
            span.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, len(reply.split()))
            span.set_attribute(SpanAttributes.OUTPUT_VALUE, reply)
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, reply)
        return format(root.get_span_context().trace_id, "032x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=f"http://127.0.0.1:{os.environ.get('RAGPULSE_PORT', '8080')}")
    parser.add_argument("--api-key", default=os.environ.get("RAGPULSE_API_KEY"))
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else None
    provider = TracerProvider(resource=Resource.create({"service.name": "nimbus-support"}))
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=f"{args.server}/v1/otlp/v1/traces", headers=headers)))
    tracer = provider.get_tracer("nimbus-support")
    for question in ("How do I reset the thermostat?", "Does it work with 5 GHz Wi-Fi?"):
        print(answer(tracer, question), question)
    provider.shutdown()  # flushes the batch processor


if __name__ == "__main__":
    main()
