"""Benchmark the local model: load time, time to first token and tokens/s.

Usage: python bench/local_model.py [--model PATH.gguf] [--runs N] [--max-tokens N]

Runs each prompt through ``LocalProvider.stream`` (the same path the app uses: worker thread,
chat template, streaming) and prints the median time to first token and decode speed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnstone_tui.config import Config  # noqa: E402
from turnstone_tui.core.provider import ContentDelta, ModelRequest, ProviderError, UsageUpdate  # noqa: E402
from turnstone_tui.providers.local_provider import LocalProvider  # noqa: E402

PROMPTS = [
    "Say hello",
    "What is the capital of France?",
    "Explain in a few sentences what a hash table is.",
    "Write a short poem about the sea.",
    "List three tips for writing clear code.",
]


@dataclass
class Run:
    prompt: str
    first_token_s: float
    completion_tokens: int
    decode_s: float

    @property
    def tokens_per_s(self) -> float:
        # The first token comes out of the prompt evaluation; the rest measure decoding.
        return (self.completion_tokens - 1) / self.decode_s if self.decode_s > 0 else 0.0


async def one_run(provider: LocalProvider, prompt: str, max_tokens: int) -> Run:
    request = ModelRequest(messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens)
    start = time.perf_counter()
    first = last = 0.0
    tokens = 0
    async for event in provider.stream(request):
        now = time.perf_counter()
        if isinstance(event, ContentDelta) and event.text:
            first = first or now
            last = now
        elif isinstance(event, UsageUpdate):
            tokens = event.completion_tokens
    return Run(prompt, (first or time.perf_counter()) - start, tokens, last - first)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="a .gguf file (default: the bundled SmolLM2-135M)")
    parser.add_argument("--runs", type=int, default=len(PROMPTS), help="number of prompts to run")
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()

    config = Config()
    config.model.name = args.model
    try:
        provider = LocalProvider.from_config(config)
    except ProviderError as exc:
        print(f"cannot run the local model:\n{exc}", file=sys.stderr)
        return 1
    try:
        start = time.perf_counter()
        await provider.load()
        load_s = time.perf_counter() - start
        print(f"model:           {provider.model}  ({provider.model_path})")
        print(f"context:         {provider.n_ctx} tokens, {provider.n_threads} threads")
        print(f"load time:       {load_s:.2f} s")
        await one_run(provider, "Hi", 4)  # warm-up: first-call allocations
        runs = [await one_run(provider, PROMPTS[i % len(PROMPTS)], args.max_tokens) for i in range(args.runs)]
    finally:
        await provider.aclose()
    for run in runs:
        print(
            f"  {run.prompt[:40]:<40}  first token {run.first_token_s * 1000:6.0f} ms  "
            f"{run.completion_tokens:4d} tokens  {run.tokens_per_s:6.1f} tok/s"
        )
    ttft = statistics.median(r.first_token_s for r in runs)
    speed = statistics.median(r.tokens_per_s for r in runs if r.completion_tokens > 1)
    print(f"time to first token (median): {ttft * 1000:.0f} ms")
    print(f"tokens/s (median):            {speed:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
