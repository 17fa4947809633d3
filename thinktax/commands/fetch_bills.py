"""`thinktax fetch-bills`: pull OpenAI and Anthropic usage and cost reports into the landing folder.

Admin keys come from ``OPENAI_ADMIN_KEY`` / ``ANTHROPIC_ADMIN_KEY`` and are never printed or
written; base URLs can be pointed elsewhere with ``THINKTAX_OPENAI_BASE_URL`` /
``THINKTAX_ANTHROPIC_BASE_URL`` (plain http only to a loopback host). Pages land in
``<landing>/bills/<provider>/`` as returned; the next ``thinktax run`` ingests them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time

from thinktax.commands import day_arg

NAME = "fetch-bills"
HELP = "Pull the OpenAI and Anthropic usage and cost reports (admin keys from the environment) into landing/bills/."

# Injectable for tests (a 429 with Retry-After must not make the suite wait).
_sleep = time.sleep


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", type=day_arg, required=True, help="first UTC day to fetch (YYYY-MM-DD)")
    p.add_argument(
        "--until",
        type=day_arg,
        help="last UTC day to fetch, inclusive (default: yesterday, the last complete UTC day)",
    )
    p.add_argument("--landing", help="landing folder (default $THINKTAX_LANDING or ./landing)")
    p.add_argument("--provider", choices=("openai", "anthropic", "all"), default="all", help="which provider (default all)")


def run(args: argparse.Namespace) -> int:
    from services import billing_api as api  # noqa: PLC0415
    from services.config import resolve_paths  # noqa: PLC0415

    today = dt.datetime.now(dt.timezone.utc).date()
    until = args.until or today - dt.timedelta(days=1)
    if args.since > until:
        print(f"thinktax: --since {args.since} is after --until {until} (default: yesterday UTC); nothing to fetch",
              file=sys.stderr)
        return 2
    if until >= today:
        print(f"thinktax: note: {today} (UTC) is not over; its figures will change when it is fetched again",
              file=sys.stderr)
    landing, _ = resolve_paths(args.landing, None)
    providers = ["openai", "anthropic"] if args.provider == "all" else [args.provider]

    keys = {p: os.environ.get(api.KEY_ENV[p], "").strip() for p in providers}
    missing = [p for p in providers if not keys[p]]
    for p in missing:
        level = "skipping" if args.provider == "all" else "cannot fetch"
        print(f"thinktax: {level} {p}: environment variable {api.KEY_ENV[p]} is not set", file=sys.stderr)
    if (args.provider != "all" and missing) or len(missing) == len(providers):
        return 2

    secrets = [k for k in keys.values() if k]
    status = 0
    for provider in providers:
        if not keys[provider]:
            continue
        try:
            base = api.base_url(provider)
            results = api.fetch(
                provider, args.since, until, landing, key=keys[provider], base=base, sleep=_sleep,
                on_retry=lambda msg: print(f"thinktax: {api.redact(msg, secrets)}", file=sys.stderr),
            )
        except api.BillingAPIError as exc:
            print(f"thinktax: {provider}: {api.redact(str(exc), secrets)}", file=sys.stderr)
            status = 1
            continue
        for r in results:
            counts = {s: sum(1 for p in r.pages if p.status == s) for s in ("written", "revision", "unchanged")}
            where = r.pages[0].path.parent if r.pages else landing / "bills" / provider
            print(
                f"{provider} {r.endpoint.name} {args.since}..{until}: {len(r.pages)} page(s) "
                f"({counts['written']} new, {counts['revision']} revised, {counts['unchanged']} unchanged) -> {where}"
            )
    return status
