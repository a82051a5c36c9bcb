"""OTLP/HTTP trace ingestion: decode an export (`decode`), keep the spans ragpulse reads (`spans`), buffer them by
trace until the trace is whole (`buffer`), and assemble one ragpulse trace from OpenInference or OpenLLMetry / GenAI
spans (`assemble`)."""
