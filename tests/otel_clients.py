"""Run in .thinktax/otel-venv by tests/sources/test_otel_instrumentations.py (never imported by thinktax or
by pytest): one instrumentation, the real SDK clients against the test's stub server, spans exported
with the real OTLP/HTTP exporter to the test's receiver.

    python tests/otel_clients.py INSTRUMENTATION STUB_URL OTLP_URL CALL[,CALL...]

A CALL is ``client:body``: the client (openai, anthropic, gemini, converse, invoke, pydantic_openai,
pydantic_anthropic) and the response body (tests/fixtures/real/otel_bodies/<body>.json) the stub
returns for it: the body's name is the first segment of the URL path each client is pointed at.
"""

from __future__ import annotations

import json
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

MODELS = {  # the request model of each body (the response names its own)
    "openai_chat_cached_reasoning": "o4-mini",
    "anthropic_messages_cache_read_write": "claude-sonnet-4-5",
    "anthropic_messages_thinking": "claude-sonnet-4-5",
    "gemini_generate_content_cached_thoughts": "gemini-2.5-flash",
    "bedrock_converse_cache_write": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "bedrock_converse_cache_read": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "bedrock_invoke_anthropic_cache_write": "anthropic.claude-3-5-haiku-20241022-v1:0",
    "bedrock_invoke_anthropic_cache_read": "anthropic.claude-3-5-haiku-20241022-v1:0",
}


def instrument(name: str) -> None:
    if name == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        OpenAIInstrumentor().instrument()
    elif name == "google-genai":
        from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor
        GoogleGenAiSdkInstrumentor().instrument()
    elif name == "openllmetry-openai":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        OpenAIInstrumentor().instrument()
    elif name == "openllmetry-anthropic":
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
        AnthropicInstrumentor().instrument()
    elif name == "openllmetry-bedrock":
        from opentelemetry.instrumentation.bedrock import BedrockInstrumentor
        BedrockInstrumentor().instrument()
    elif name == "openinference-openai":
        from openinference.instrumentation.openai import OpenAIInstrumentor
        OpenAIInstrumentor().instrument()
    elif name == "openinference-anthropic":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor
        AnthropicInstrumentor().instrument()
    elif name == "openlit":
        import openlit
        openlit.init(disable_metrics=True, disable_events=True, capture_message_content=False)  # uses the global provider
    elif name in ("pydantic-ai", "anthropic-sdk"):
        pass  # pydantic-ai: Agent(instrument=True) below; the anthropic SDK: its own spans, if it has them
    else:
        raise SystemExit(f"unknown instrumentation {name}")


def call(client: str, body: str, stub: str) -> None:
    base = f"{stub}/{body}"
    model = MODELS[body]
    prompt = [{"role": "user", "content": "What is 2 + 2?"}]
    if client == "openai":
        import openai
        openai.OpenAI(api_key="sk-test", base_url=f"{base}/v1", max_retries=0).chat.completions.create(
            model=model, messages=prompt)
    elif client == "anthropic":
        import anthropic
        anthropic.Anthropic(api_key="sk-ant-test", base_url=base, max_retries=0).messages.create(
            model=model, max_tokens=1024, messages=prompt)
    elif client == "gemini":
        from google import genai
        from google.genai import types
        c = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=f"{base}/"))
        c.models.generate_content(model=model, contents="What is 2 + 2?")
    elif client in ("converse", "invoke"):
        import boto3
        br = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=base,
                          aws_access_key_id="AKIATEST", aws_secret_access_key="test", aws_session_token=None)
        if client == "converse":
            br.converse(modelId=model, messages=[{"role": "user", "content": [{"text": "What is 2 + 2?"}]}])
        else:
            r = br.invoke_model(modelId=model, body=json.dumps({"anthropic_version": "bedrock-2023-05-31",
                                                                "max_tokens": 50, "messages": prompt}))
            r["body"].read()
    elif client in ("pydantic_openai", "pydantic_anthropic"):
        from pydantic_ai import Agent
        if client == "pydantic_openai":
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider
            m = OpenAIChatModel(model, provider=OpenAIProvider(base_url=f"{base}/v1", api_key="sk-test"))
        else:
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider
            import anthropic  # its own client: pydantic-ai would hand anthropic 2.x an httpx (not httpx2) client
            m = AnthropicModel(model, provider=AnthropicProvider(
                anthropic_client=anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=base, max_retries=0)))
        Agent.instrument_all(True)
        Agent(m, name="pricing-agent").run_sync("What is 2 + 2?")
    else:
        raise SystemExit(f"unknown client {client}")


def main(argv: list[str]) -> None:
    name, stub, otlp, calls = argv
    provider = TracerProvider(resource=Resource.create({"service.name": name, "service.namespace": "otel-test"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=otlp)))
    trace.set_tracer_provider(provider)
    instrument(name)
    tracer = trace.get_tracer("thinktax.test")
    for c in calls.split(","):
        client, body = c.split(":")
        with tracer.start_as_current_span(f"task {client} {body}"):  # the root: one trace a call
            call(client, body, stub)
    provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
