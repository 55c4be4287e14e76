"""API backends (OpenAI-compatible, Gemini): what a backend is, its settings, key, URL, cost and thinking, and one
request per SDK.

How every backend's requests are sent (concurrency, rate limits, retries, timeouts) is one mixin,
:class:`~judgebench.llm.remote.paced_calls.PacedCalls`; what a call gives back is in
:mod:`judgebench.llm.remote.call_results`. The backend classes stay here: configs name them by this module's path.
"""

from __future__ import annotations

import os

from judgebench.exceptions import ConfigError
from judgebench.llm.remote.batch_settings import BatchSettings, check_mode
from judgebench.llm.remote.call_results import RequestStats
from judgebench.llm.remote.gemini_models import finish_reason, gemini_answer, normalised, thinking_request
from judgebench.llm.remote.http_transport import HTTP_TRANSPORTS, openai_http_client
from judgebench.llm.remote.paced_calls import PacedCalls
from judgebench.llm.remote.provider_errors import PermanentError, TransientError, gemini_errors, openai_errors
from judgebench.secrets import ENV_NAME, mask_url, register_secret_env

DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "gemini": "https://generativelanguage.googleapis.com"}


class APIBackend(PacedCalls):
    """What every API backend is: its settings (checked when built), key, URL, cost, thinking and the cache key of
    its answers; ``async with`` and :meth:`complete` come from :class:`PacedCalls`, one request from ``_send``."""

    backend = "api"
    default_key_envs: tuple[str, ...] = ()
    batch_limits: dict = {}  # the provider's batch limits where they differ from BatchSettings' (OpenAI's)

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | list[str] | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_output_tokens: int = 64,
        max_concurrency: int = 8,
        adaptive: bool = False,
        min_concurrency: int = 1,
        initial_concurrency: int | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        max_retries: int = 6,
        timeout_s: float = 60.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 60.0,
        price_input_per_mtok: float = 0.0,
        price_output_per_mtok: float = 0.0,
        mode: str = "online",
        batch: dict | BatchSettings | None = None,
        thinking: str | int | bool | None = "off",
        thinking_reserve: int = 1024,
    ):
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency={max_concurrency}: expected an integer >= 1")
        if not 1 <= min_concurrency <= max_concurrency or (initial_concurrency is not None and initial_concurrency < 1):
            raise ConfigError(
                f"min_concurrency={min_concurrency}, initial_concurrency={initial_concurrency}: expected "
                f"1 <= min_concurrency <= max_concurrency ({max_concurrency}) and initial_concurrency >= 1 or null"
            )
        for name, value in (("requests_per_minute", requests_per_minute), ("tokens_per_minute", tokens_per_minute)):
            if value is not None and value <= 0:
                raise ConfigError(f"{name}={value}: expected a positive number or null")
        if max_retries < 0 or timeout_s <= 0:
            raise ConfigError(
                f"max_retries={max_retries}, timeout_s={timeout_s}: expected max_retries >= 0 and timeout_s > 0"
            )
        self.model, self.base_url = model, base_url
        self.key_envs = [api_key_env] if isinstance(api_key_env, str) else list(api_key_env or self.default_key_envs)
        if any(not isinstance(n, str) or not ENV_NAME.match(n) for n in self.key_envs):
            raise ConfigError(
                "api_key_env: expected the name(s) of environment variables (e.g. OPENAI_API_KEY), not a key "
                "(the value is not shown)"
            )
        register_secret_env(*self.key_envs)  # its value is scrubbed from every message, log line and artifact
        self.temperature, self.top_p, self.max_output_tokens = float(temperature), float(top_p), int(max_output_tokens)
        self.max_concurrency, self.rpm, self.tpm = int(max_concurrency), requests_per_minute, tokens_per_minute
        self.adaptive, self.min_concurrency, self.initial_concurrency = (
            bool(adaptive),
            int(min_concurrency),
            initial_concurrency,
        )
        self.max_retries, self.timeout_s = int(max_retries), float(timeout_s)
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self.price_in, self.price_out = price_input_per_mtok, price_output_per_mtok
        # online: one request per prompt; batch: the provider's batch API (llm/batch_api/batch.py), at batch prices
        self.mode = check_mode(mode)
        self.batch = (
            BatchSettings.from_config({**self.batch_limits, **dict(batch or {})})
            if not isinstance(batch, BatchSettings)
            else batch
        )
        self.stats = RequestStats()
        self._connect_failures = 0
        # thinking (reasoning before the answer): off, a budget in tokens or a level; each SDK says what it sends
        self.thinking, self.thinking_reserve = normalised(thinking), int(thinking_reserve)
        if self.thinking_reserve < 0:
            raise ConfigError(f"thinking_reserve={thinking_reserve}: expected an integer >= 0")
        self.thinking_config, self.request_max_output_tokens = self._thinking()

    def _thinking(self) -> tuple[dict | None, int]:
        """(what the request says about thinking, the request's max_output_tokens: the answer's plus what
        thinking may use). Refuses (ConfigError) a setting the model cannot take."""
        return None, self.max_output_tokens

    @property
    def thinking_allowance(self) -> int:
        """The most thinking tokens one request may spend (0: it does not think)."""
        return self.request_max_output_tokens - self.max_output_tokens

    # -- what identifies an answer (the cache key) -------------------------------------------
    def generation_params(self) -> dict:
        params = {"temperature": self.temperature, "top_p": self.top_p, "max_output_tokens": self.max_output_tokens}
        if self.thinking_config:  # thinking changes the answer; absent, the key is what it was before thinking existed
            params.update(thinking=self.thinking_config, max_output_tokens=self.request_max_output_tokens)
        return params

    def cost(self, input_tokens: int, output_tokens: int, batch: bool = False, thinking_tokens: int = 0) -> float:
        """USD for the tokens, thinking billed at the output price; ``batch``: an answer a batch gave, at the
        batch discount (batch.price_factor)."""
        factor = self.batch.price_factor if batch else 1.0
        return factor * (input_tokens * self.price_in + (output_tokens + thinking_tokens) * self.price_out) / 1e6

    def api_key(self) -> str:
        for env in self.key_envs:
            if os.environ.get(env):
                return os.environ[env]
        if not self.key_envs:
            return "EMPTY"  # local OpenAI-compatible servers (vLLM, Ollama) accept any key
        raise ConfigError(f"{self.backend} backend ({self.model}) needs an API key: set {' or '.join(self.key_envs)}")

    def endpoint(self) -> str:
        """The URL requests go to (shown in messages with its userinfo masked)."""
        return self.client_base_url(check=False) or DEFAULT_URLS.get(self.backend, "the default endpoint")

    def client_base_url(self, check: bool = True) -> str | None:
        """The base URL given to the SDK (None: its default). A URL with credentials (``https://user:pw@host/v1``) is
        refused: httpx would send them as Basic auth in place of the Bearer key, and the server's refusal would then
        be blamed on a key that was never sent."""
        url = self.base_url or (os.environ.get("OPENAI_BASE_URL") if self.backend == "openai" else None) or None
        if check and url and mask_url(url) != url:
            where = "base_url" if self.base_url else "OPENAI_BASE_URL"
            raise ConfigError(
                f"{where}={mask_url(url)}: the URL holds credentials (user:password@), which would be sent "
                "instead of the API key; give the URL without them and the key in "
                f"{' or '.join(self.key_envs) or 'the key variable'}"
            )
        return url

    # -- one request, implemented per SDK ------------------------------------------------------
    async def open(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        pass

    async def _send(self, prompt: str, system: str | None) -> tuple[str, int, int, int]:
        """(answer text, input tokens, answer tokens, thinking tokens) of one request."""
        raise NotImplementedError

    def _cut_off(self, thinking_tokens: int, input_tokens: int = 0, output_tokens: int = 0) -> PermanentError:
        """An answer left empty because max_output_tokens ran out (thinking ate it): asking again gives the same.
        It was paid for: its tokens travel with the error and are counted (RequestStats.unused_tokens)."""
        fix = "raise max_output_tokens" + (" or thinking_reserve, or lower thinking" if self.thinking_config else "")
        return PermanentError(
            "max_tokens",
            f"the answer was cut off at max_output_tokens={self.request_max_output_tokens} "
            f"({thinking_tokens} of them spent thinking): {fix}",
            tokens=(input_tokens, output_tokens, thinking_tokens),
        )


class OpenAIBackend(APIBackend):
    """OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp): base_url picks the server."""

    backend = "openai"
    default_key_envs = ("OPENAI_API_KEY",)

    def __init__(self, model: str, *, frequency_penalty: float = 0.0, http_transport: str = "aiohttp", **kw):
        super().__init__(model, **kw)
        self.frequency_penalty = float(frequency_penalty)
        if http_transport not in HTTP_TRANSPORTS:
            raise ConfigError(f"http_transport={http_transport!r}: expected one of {', '.join(HTTP_TRANSPORTS)}")
        self.http_transport = http_transport

    def generation_params(self) -> dict:
        return {**super().generation_params(), "frequency_penalty": self.frequency_penalty}

    def _thinking(self) -> tuple[dict | None, int]:
        """Reasoning models take a level (``reasoning_effort``) and no budget; off sends nothing (GPT-4o and
        most OpenAI-compatible servers know no such setting)."""
        if self.thinking in (None, "off"):
            return None, self.max_output_tokens
        if isinstance(self.thinking, int):
            raise ConfigError(
                f"thinking={self.thinking}: the OpenAI API takes a reasoning level (minimal, low, medium, high), "
                "not a budget"
            )
        if self.thinking_reserve < 1:
            raise ConfigError(
                f"thinking_reserve={self.thinking_reserve}: reasoning at level {self.thinking} needs tokens "
                "set aside in max_output_tokens; expected an integer >= 1"
            )
        return {"reasoning_effort": self.thinking}, self.max_output_tokens + self.thinking_reserve

    async def open(self) -> None:
        import openai

        self._client = openai.AsyncOpenAI(
            api_key=self.api_key(),
            base_url=self.client_base_url(),
            max_retries=0,
            timeout=self.timeout_s,
            http_client=openai_http_client(self.http_transport),
        )

    async def close(self) -> None:
        await self._client.close()

    async def _send(self, prompt: str, system: str | None) -> tuple[str, int, int, int]:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        # a reasoning model wants max_completion_tokens (answer and reasoning); others the classic max_tokens
        limit = (
            {"max_completion_tokens": self.request_max_output_tokens, **self.thinking_config}
            if self.thinking_config
            else {"max_tokens": self.max_output_tokens}
        )
        with openai_errors():
            resp = await self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                top_p=self.top_p,
                frequency_penalty=self.frequency_penalty,
                **limit,
            )
        if not getattr(resp, "choices", None):
            raise TransientError("malformed", "response without choices")
        usage = resp.usage
        details = getattr(usage, "completion_tokens_details", None)
        n_think = getattr(details, "reasoning_tokens", 0) or 0  # part of completion_tokens
        n_out = max(0, (getattr(usage, "completion_tokens", 0) or 0) - n_think)
        text = resp.choices[0].message.content or ""
        n_in = getattr(usage, "prompt_tokens", 0) or 0
        if not text.strip() and resp.choices[0].finish_reason == "length":
            raise self._cut_off(n_think, n_in, n_out)
        return text, n_in, n_out, n_think


class GeminiBackend(APIBackend):
    """Google Gemini through the official google-genai SDK (google-generativeai is deprecated)."""

    backend = "gemini"
    default_key_envs = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    batch_limits = {"max_bytes": 20_000_000}  # inline requests of one batch job

    async def open(self) -> None:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=int(self.timeout_s * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._client = genai.Client(api_key=self.api_key(), http_options=options)

    async def close(self) -> None:
        try:
            await self._client.aio.aclose()
        except AttributeError:  # older SDKs have no aclose
            pass

    def _thinking(self) -> tuple[dict | None, int]:
        """A budget (2.5), a level (3 and later), or nothing (2.0 and older); see llm/remote/gemini_models.py."""
        return thinking_request(self.model, self.thinking, self.thinking_reserve, self.max_output_tokens)

    def request_config(self, system: str | None):
        """The request's GenerateContentConfig: also what a batch line carries (llm/batch_api/batch_gemini.py)."""
        from google.genai import types

        return types.GenerateContentConfig(
            temperature=self.temperature,
            top_p=self.top_p,
            max_output_tokens=self.request_max_output_tokens,
            system_instruction=system or None,
            thinking_config=types.ThinkingConfig(**self.thinking_config) if self.thinking_config else None,
            # no tools: the SDK's client-side function-calling loop (and its log line per request) has nothing to do
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    async def _send(self, prompt: str, system: str | None) -> tuple[str, int, int, int]:
        with gemini_errors():
            resp = await self._client.aio.models.generate_content(
                model=self.model, contents=prompt, config=self.request_config(system)
            )
        text, n_in, n_out, n_think = gemini_answer(resp)
        if not text.strip() and finish_reason(resp) == "MAX_TOKENS":
            raise self._cut_off(n_think, n_in, n_out)
        return text, n_in, n_out, n_think
