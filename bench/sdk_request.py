"""A reference for the ``-p`` round trip: the model SDK alone, as the app's provider uses it.

Imports ``openai`` (with the cyclic GC off, as the console script starts), streams one chat
completion from the given OpenAI-compatible server the way ``OpenAIProvider`` does (the SDK's raw
JSON events, no pydantic model per event), prints the answer and exits. What a ``-p`` run costs
beyond this is the app's own (its modules, storage, the session); bench/cold_start.py runs it in
the same rounds.

Run: ``python bench/sdk_request.py BASE_URL``
"""

from __future__ import annotations

import gc

gc.disable()

import asyncio  # noqa: E402
import sys  # noqa: E402

import openai  # noqa: E402


async def main(base_url: str) -> None:
    client = openai.AsyncOpenAI(api_key="bench-key", base_url=base_url, max_retries=0)
    body = {
        "model": "scripted-model",
        "messages": [{"role": "user", "content": "say something"}],
        "stream": True,
    }
    stream = await client.post(
        "/chat/completions", body=body, cast_to=object, stream=True, stream_cls=openai.AsyncStream[object]
    )
    async for chunk in stream:
        for choice in chunk.get("choices") or ():
            sys.stdout.write((choice.get("delta") or {}).get("content") or "")
    print()
    await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
