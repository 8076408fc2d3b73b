"""The language models a dream's synthesis may use (``sync.dream.synthesis.Writer``): any
OpenAI-compatible chat endpoint (a local Ollama, vLLM, a hosted one) over httpx, and Gemini through
google-genai. Their errors become memsync's: a provider that refuses or fails is a ``PermanentError``
or ``TransientError`` naming it, never the key.
"""

from __future__ import annotations

from typing import Any

import httpx

from sync.errors import PermanentError, TransientError


class OpenAICompatibleWriter:
    """``POST {base_url}/chat/completions`` with one user message."""

    provider = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    def write(self, prompt: str) -> str:
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], "temperature": 0}
        try:
            response = self._client.post("/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise TransientError(
                f"the synthesis model at {self._client.base_url} is unreachable: {type(exc).__name__}"
            ) from None
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientError(f"the synthesis model answered HTTP {response.status_code}: try again later")
        if response.status_code >= 400:
            raise PermanentError(f"the synthesis model refused the request: HTTP {response.status_code}")
        try:
            return str(response.json()["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            raise PermanentError("the synthesis model's answer is not a chat completion") from None

    def close(self) -> None:
        self._client.close()


class GeminiWriter:
    """``generate_content`` through google-genai (the card's package)."""

    provider = "gemini"

    def __init__(self, model: str, api_key: str, *, base_url: str | None = None, timeout: float = 120.0) -> None:
        from google import genai
        from google.genai import types

        self.model = model
        self._client: Any = genai.Client(
            api_key=api_key, http_options=types.HttpOptions(base_url=base_url, timeout=int(timeout * 1000))
        )

    def write(self, prompt: str) -> str:
        from google.genai import errors

        try:
            response = self._client.models.generate_content(model=self.model, contents=prompt)
        except errors.ServerError as exc:
            raise TransientError(f"Gemini failed the synthesis: HTTP {exc.code}: try again later") from None
        except errors.ClientError as exc:
            raise PermanentError(f"Gemini refused the synthesis: HTTP {exc.code} {exc.status}") from None
        text = response.text
        if not text:
            raise PermanentError("Gemini's synthesis answer holds no text")
        return str(text)

    def close(self) -> None:
        self._client.close()
