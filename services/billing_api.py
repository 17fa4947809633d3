"""Pull provider usage and cost reports page by page, saving each page exactly as returned.

Endpoints (admin keys from the environment; see ``thinktax fetch-bills``):

* OpenAI: ``GET /v1/organization/usage/completions`` and ``GET /v1/organization/costs``,
  ``Authorization: Bearer <OPENAI_ADMIN_KEY>``, ``start_time``/``end_time`` Unix seconds,
  ``bucket_width=1d``, ``group_by=...`` repeated, next page via ``page=<next_page>``.
* Anthropic: ``GET /v1/organizations/usage_report/messages`` and ``GET
  /v1/organizations/cost_report``, ``x-api-key: <ANTHROPIC_ADMIN_KEY>`` and
  ``anthropic-version: 2023-06-01``, ``starting_at``/``ending_at`` RFC 3339, ``group_by[]=...``,
  next page via ``page=<next_page>``.

Each page is written to ``<landing>/bills/<provider>/<endpoint>__<since>__p<N>.json`` with the
response body byte for byte, so the parsers in ``sources/bills_*.py`` read what the API said.
A name already holding the same bytes is left alone; one holding other bytes (a re-fetch after
the provider amended a day) is never overwritten: the page goes to ``...__p<N>__r<K>.json``.

HTTP: standard-library ``urllib``; 429 honours ``Retry-After`` (seconds or an HTTP date) and
5xx / connection errors back off exponentially (1, 2, 4, ... s, capped), both for a bounded
number of attempts; redirects are refused (they would carry the key elsewhere). Keys are sent
only in headers and never appear in messages, logs or files (``redact`` scrubs error bodies).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import ipaddress
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ANTHROPIC_VERSION = "2023-06-01"
USER_AGENT = "thinktax-fetch-bills/1"
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}
BASE_URL_ENV = {"openai": "THINKTAX_OPENAI_BASE_URL", "anthropic": "THINKTAX_ANTHROPIC_BASE_URL"}
KEY_ENV = {"openai": "OPENAI_ADMIN_KEY", "anthropic": "ANTHROPIC_ADMIN_KEY"}
MAX_PAGES = 10_000  # per endpoint and run: a guard against a server that never stops paging


class BillingAPIError(RuntimeError):
    """A request that failed for good (after retries, or a 4xx other than 429)."""


@dataclass(frozen=True)
class Endpoint:
    provider: str  # 'openai' | 'anthropic'
    name: str  # file-name stem, e.g. 'usage_completions'
    path: str  # e.g. '/v1/organization/usage/completions'
    params: tuple[tuple[str, str], ...]  # fixed query parameters (besides the time range)


ENDPOINTS: dict[str, list[Endpoint]] = {
    "openai": [
        Endpoint(
            "openai",
            "usage_completions",
            "/v1/organization/usage/completions",
            (("bucket_width", "1d"), ("group_by", "model"), ("group_by", "project_id"), ("limit", "31")),
        ),
        Endpoint(
            "openai",
            "costs",
            "/v1/organization/costs",
            (("bucket_width", "1d"), ("group_by", "project_id"), ("group_by", "line_item"), ("limit", "180")),
        ),
    ],
    "anthropic": [
        Endpoint(
            "anthropic",
            "usage_report_messages",
            "/v1/organizations/usage_report/messages",
            (
                ("bucket_width", "1d"),
                ("group_by[]", "model"),
                ("group_by[]", "workspace_id"),
                ("group_by[]", "service_tier"),
                ("group_by[]", "context_window"),
                ("limit", "31"),
            ),
        ),
        Endpoint(
            "anthropic",
            "cost_report",
            "/v1/organizations/cost_report",
            (("bucket_width", "1d"), ("group_by[]", "workspace_id"), ("group_by[]", "description"), ("limit", "31")),
        ),
    ],
}


@dataclass
class RetryPolicy:
    max_attempts: int = 6  # per request, first try included
    base_delay_s: float = 1.0  # 5xx back-off: base, 2*base, 4*base, ...
    max_delay_s: float = 60.0  # cap of one back-off wait
    max_retry_after_s: float = 600.0  # a longer Retry-After than this fails instead of waiting


@dataclass
class SavedPage:
    path: Path
    status: str  # 'written', 'unchanged', 'revision'
    bytes: int


@dataclass
class FetchResult:
    endpoint: Endpoint
    pages: list[SavedPage] = field(default_factory=list)
    retries: int = 0


def redact(text: str, secrets: list[str]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(req.full_url, code, f"redirect refused ({msg})", headers, fp)


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(_NoRedirect())


def check_base_url(url: str) -> str:
    """https, or plain http only to a loopback host (tests); no credentials, query or fragment."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host:
        raise BillingAPIError(f"base URL must be http(s)://host[:port]: {url!r}")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise BillingAPIError("base URL must not carry credentials, a query or a fragment")
    if parts.scheme == "http":
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise BillingAPIError(f"refusing to send an admin key over plain http to {host}")
    return url.rstrip("/")


def base_url(provider: str, env: dict[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return check_base_url(env.get(BASE_URL_ENV[provider]) or DEFAULT_BASE_URLS[provider])


def auth_headers(provider: str, key: str) -> dict[str, str]:
    if provider == "openai":
        return {"Authorization": f"Bearer {key}", "Accept": "application/json", "User-Agent": USER_AGENT}
    return {
        "x-api-key": key,
        "anthropic-version": ANTHROPIC_VERSION,
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }


def time_params(provider: str, since: dt.date, until: dt.date) -> list[tuple[str, str]]:
    """The report window: whole UTC days ``since`` .. ``until`` inclusive (end exclusive)."""
    start = dt.datetime.combine(since, dt.time(), dt.timezone.utc)
    end = dt.datetime.combine(until + dt.timedelta(days=1), dt.time(), dt.timezone.utc)
    if provider == "openai":
        return [("start_time", str(int(start.timestamp()))), ("end_time", str(int(end.timestamp())))]
    return [("starting_at", start.strftime("%Y-%m-%dT%H:%M:%SZ")), ("ending_at", end.strftime("%Y-%m-%dT%H:%M:%SZ"))]


def retry_after_seconds(value: str | None, now: Callable[[], dt.datetime]) -> float | None:
    """Retry-After as seconds: an integer, or an HTTP date (RFC 9110); None if absent/unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return max(0.0, (when - now()).total_seconds())


def get(
    url: str,
    headers: dict[str, str],
    *,
    secrets: list[str],
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    now: Callable[[], dt.datetime],
    on_retry: Callable[[str], None] = lambda _msg: None,
    timeout_s: float = 60.0,
) -> bytes:
    """GET with bounded retries; the body of the first 2xx response."""
    opener = _opener()
    last = ""
    for attempt in range(1, policy.max_attempts + 1):
        req = urllib.request.Request(url, headers=headers, method="GET")
        wait: float | None
        try:
            with opener.open(req, timeout=timeout_s) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            body = redact(exc.read(2000).decode("utf-8", errors="replace"), secrets) if exc.fp else ""
            path = urllib.parse.urlsplit(url).path
            last = f"HTTP {exc.code} from {path}: {body.strip()[:300]}"
            if exc.code == 429:
                wait = retry_after_seconds(exc.headers.get("Retry-After"), now)
                if wait is None:
                    wait = min(policy.base_delay_s * 2 ** (attempt - 1), policy.max_delay_s)
                elif wait > policy.max_retry_after_s:
                    raise BillingAPIError(f"{last} (Retry-After {wait:.0f}s exceeds {policy.max_retry_after_s:.0f}s)") from None
            elif 500 <= exc.code <= 599:
                wait = min(policy.base_delay_s * 2 ** (attempt - 1), policy.max_delay_s)
            else:
                raise BillingAPIError(last) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            last = f"connection error to {urllib.parse.urlsplit(url).netloc}: {redact(str(reason), secrets)}"
            wait = min(policy.base_delay_s * 2 ** (attempt - 1), policy.max_delay_s)
        if attempt == policy.max_attempts:
            break
        on_retry(f"{last}; retry {attempt}/{policy.max_attempts - 1} in {wait:g}s")
        sleep(wait)
    raise BillingAPIError(f"giving up after {policy.max_attempts} attempts: {last}")


def iter_pages(
    provider: str,
    endpoint: Endpoint,
    since: dt.date,
    until: dt.date,
    *,
    key: str,
    base: str,
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    now: Callable[[], dt.datetime],
    on_retry: Callable[[str], None] = lambda _msg: None,
) -> Iterator[bytes]:
    """The raw bodies of every page of one report, following ``next_page``."""
    headers = auth_headers(provider, key)
    fixed = [*time_params(provider, since, until), *endpoint.params]
    token: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        params = fixed + ([("page", token)] if token else [])
        url = f"{base}{endpoint.path}?{urllib.parse.urlencode(params)}"
        body = get(url, headers, secrets=[key], policy=policy, sleep=sleep, now=now, on_retry=on_retry)
        try:
            page = json.loads(body)
        except ValueError:
            raise BillingAPIError(f"{endpoint.path}: response is not JSON: {redact(body[:200].decode('utf-8', 'replace'), [key])!r}") from None
        if not isinstance(page, dict) or not isinstance(page.get("data"), list):
            raise BillingAPIError(f"{endpoint.path}: response is not a report page (no 'data' list)")
        yield body
        token = page.get("next_page")
        if not page.get("has_more") or not token:
            return
        if token in seen:
            raise BillingAPIError(f"{endpoint.path}: next_page token repeats; stopping")
        seen.add(token)
    raise BillingAPIError(f"{endpoint.path}: more than {MAX_PAGES} pages")


def save_page(folder: Path, stem: str, body: bytes) -> SavedPage:
    """Write ``<stem>.json`` (or ``<stem>__r<K>.json`` if that name holds other bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    candidates = [folder / f"{stem}.json"] + [folder / f"{stem}__r{k}.json" for k in range(2, 1000)]
    for n, path in enumerate(candidates):
        if path.exists():
            if path.read_bytes() == body:
                return SavedPage(path, "unchanged", len(body))
            continue
        tmp = folder / f".{path.name}.tmp-{os.getpid()}"
        with open(tmp, "wb") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return SavedPage(path, "written" if n == 0 else "revision", len(body))
    raise BillingAPIError(f"too many revisions of {stem}.json in {folder}")


def fetch(
    provider: str,
    since: dt.date,
    until: dt.date,
    landing: Path,
    *,
    key: str,
    base: str,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    on_retry: Callable[[str], None] = lambda _msg: None,
) -> list[FetchResult]:
    """Fetch every report of ``provider`` for the days ``since``..``until`` into ``landing``."""
    policy = policy or RetryPolicy()
    folder = landing / "bills" / provider
    results = []
    for endpoint in ENDPOINTS[provider]:
        result = FetchResult(endpoint)
        retries: list[str] = []

        def note(msg: str, _r: list[str] = retries) -> None:
            _r.append(msg)
            on_retry(f"{provider} {endpoint.name}: {msg}")  # noqa: B023

        pages = iter_pages(provider, endpoint, since, until, key=key, base=base, policy=policy,
                           sleep=sleep, now=now, on_retry=note)
        for n, body in enumerate(pages, start=1):
            result.pages.append(save_page(folder, f"{endpoint.name}__{since.isoformat()}__p{n}", body))
        result.retries = len(retries)
        results.append(result)
    return results
