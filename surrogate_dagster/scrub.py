"""One scrubber for every text the project keeps: known secret values, in every form a server may echo.

A secret is the value of an environment variable that holds a credential (`SECRET_ENVS`, plus
the names a profile gives: ``hub.token_env``, the S3 key variables, ``phases.llm.api_key_env``,
registered with :func:`register_secret_envs`). A server that echoes a credential in an error
body may send it as it was sent or encoded, so each value is matched in these forms:

- plain, and any ``WINDOW``-character piece of it (a body cut at 200 characters keeps a piece);
- base64 and base64url, at each of the three byte alignments it can have inside a longer
  encoded text (``Basic base64(user:token)``): the characters that depend on the secret alone;
- hex (lower and upper case) and URL-encoded (``%2B`` and ``+`` for space).

Beside the known values, the credential shapes that need no value are redacted: the token after
``Bearer``/``Basic`` or in an auth header, and the token formats of the Hub, Anthropic and AWS.

It is applied where text leaves the code: `install_log_scrub` makes every stdlib log record
(Dagster's ``context.log`` included) scrubbed at creation, its exception too; `scrub_exception`
scrubs an exception (its chain included) in place, and the clients' boundaries raise only
scrubbed exceptions (`scrubbing_errors`); `scrub_value` scrubs metadata and stored rows.

Pure standard library: every layer may use it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote, quote_plus

# The credential variables of the shipped profiles (resources/*.yaml) and the SDKs' own names.
SECRET_ENVS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY", "WASABI_ACCESS_KEY", "WASABI_SECRET",
               "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
MIN_SECRET_CHARS = 8   # shorter values ("1", "local") would redact ordinary words
WINDOW = 16            # a run of this many characters of a secret is redacted on its own

_registered: set[str] = set(SECRET_ENVS)
_lock = threading.Lock()

# A credential in an auth header (text, JSON or a Python repr), or after an auth scheme: there
# a token of 16+ token characters with a digit in it, so prose ("basic arithmetic") stays.
_HEADER_SECRET = re.compile(
    r"(?i)(\b(?:x-api-key|api[-_]?key|(?:proxy-)?authorization|x-amz-security-token)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic)\s+)?|\b(?:bearer|basic)\s+(?=[A-Za-z0-9+/._~=-]*\d))"
    r"([^\s\"'<>,;}\]]{8,})")
# Token formats recognisable without the value: Hub user tokens, Anthropic keys, AWS key ids.
_TOKEN_SHAPES = re.compile(r"\bhf_[A-Za-z0-9]{30,}\b|\bsk-ant-[A-Za-z0-9_-]{20,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")


def register_secret_envs(*names: str | None) -> None:
    """Add environment variable names whose values are secrets (a profile's key variables)."""
    with _lock:
        _registered.update(n for n in names if n)


def secret_envs() -> tuple[str, ...]:
    return tuple(sorted(_registered))


def known_secrets(environ: os._Environ | dict | None = None) -> dict[str, str]:
    """{value: variable} of the registered variables that are set to a value worth matching."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for name in secret_envs():
        value = env.get(name) or ""
        if len(value) >= MIN_SECRET_CHARS:
            out.setdefault(value, name)
    return out


def _b64_cores(raw: bytes, alphabet: bytes | None) -> set[str]:
    """The base64 characters determined by ``raw`` alone, at each alignment inside a longer text."""
    cores = set()
    n = len(raw)
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw, altchars=alphabet).decode()
        core = enc[(8 * k + 5) // 6:((k + n) * 8) // 6]
        if len(core) >= MIN_SECRET_CHARS:
            cores.add(core)
    return cores


def encoded_forms(secret: str) -> set[str]:
    """Every form of ``secret`` matched: plain and its ``WINDOW``-character pieces, base64 and
    base64url cores, hex, URL-encoded."""
    raw = secret.encode("utf-8")
    forms = {secret, quote(secret, safe=""), quote_plus(secret), binascii.hexlify(raw).decode(),
             binascii.hexlify(raw).decode().upper()}
    forms |= _b64_cores(raw, None) | _b64_cores(raw, b"-_")
    if len(secret) > WINDOW:
        forms |= {secret[i:i + WINDOW] for i in range(len(secret) - WINDOW + 1)}
    return forms


@functools.lru_cache(maxsize=8)
def _pattern(secrets: tuple[tuple[str, str], ...]) -> tuple[re.Pattern, dict[str, str]] | None:
    """One alternation of every form of every secret, longest first (a whole value before its
    pieces), each group named by its variable."""
    forms: dict[str, str] = {}
    for value, name in secrets:
        for f in encoded_forms(value):
            forms.setdefault(f, name)
    if not forms:
        return None
    return re.compile("|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))), forms


def scrub_text(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every known secret (and ``extra`` values) in any form, and every credential
    shape, replaced by ``<REDACTED:VARIABLE>`` / ``<REDACTED>``."""
    if not isinstance(text, str) or not text:
        return text
    secrets = known_secrets()
    for value in extra:
        if value and len(value) >= MIN_SECRET_CHARS:
            secrets.setdefault(value, "SECRET")
    compiled = _pattern(tuple(sorted(secrets.items())))
    if compiled is not None:
        pattern, forms = compiled
        text = pattern.sub(lambda m: f"<REDACTED:{forms[m.group(0)]}>", text)
        # Two adjacent pieces of one secret leave two placeholders: one is enough.
        text = re.sub(r"(<REDACTED:[A-Z0-9_]+>)(?:\1)+", r"\1", text)
    text = _HEADER_SECRET.sub(lambda m: m.group(0) if m.group(2).startswith("<REDACTED")
                              else m.group(1) + "<REDACTED>", text)
    return _TOKEN_SHAPES.sub("<REDACTED>", text)


def has_secret(text: str) -> bool:
    return isinstance(text, str) and scrub_text(text) != text


def scrub_value(value: Any) -> Any:
    """``value`` with every string inside it (dict keys and values, list and tuple items)
    scrubbed; other values as they are."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub_value(k): scrub_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(scrub_value(v) for v in value)
    return value


class ScrubbedError(RuntimeError):
    """An exception whose text still held a secret after scrubbing its arguments in place: its
    type's name and its scrubbed text (raised from None, so the original is not chained)."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def scrub_exception(exc: BaseException) -> BaseException:
    """``exc`` with its arguments, notes and the same of every exception in its chain scrubbed
    in place (the type, and so callers' ``except`` clauses, unchanged); a ScrubbedError in its
    place when the text still holds a secret (a type whose message is not its arguments)."""
    for e in _chain(exc):
        try:
            e.args = tuple(scrub_value(a) for a in e.args)
            for attr in ("strerror", "filename", "msg", "message", "server_message"):
                if isinstance(getattr(e, attr, None), str):
                    setattr(e, attr, scrub_text(getattr(e, attr)))
            if getattr(e, "__notes__", None):
                e.__notes__ = [scrub_text(n) for n in e.__notes__]
        except (AttributeError, TypeError):  # a read-only attribute: checked below
            pass
    for e in _chain(exc):
        try:
            text = str(e)
        except Exception:  # noqa: BLE001 - a __str__ that fails shows nothing
            continue
        if has_secret(text):
            out = ScrubbedError(f"{type(exc).__name__}: {scrub_text(str(exc))}")
            out.__suppress_context__ = True
            return out
    return exc


@contextlib.contextmanager
def scrubbing_errors() -> Iterator[None]:
    """Re-raise any exception from the block scrubbed (:func:`scrub_exception`)."""
    try:
        yield
    except BaseException as e:  # noqa: BLE001 - scrubbed and re-raised, never swallowed
        if isinstance(e, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        out = scrub_exception(e)
        if out is e:
            raise
        raise out from None


def scrubbed_errors(fn):
    """A decorator: :func:`scrubbing_errors` around every call of ``fn`` (a generator function's
    iteration included)."""
    import inspect

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(*a, **kw):
            with scrubbing_errors():
                yield from fn(*a, **kw)
        return gen

    @functools.wraps(fn)
    def call(*a, **kw):
        with scrubbing_errors():
            return fn(*a, **kw)
    return call


def scrub_methods(cls):
    """A class decorator: :func:`scrubbed_errors` around each public method of ``cls``, inherited
    ones included (a store's ``put_bytes`` is its base class's, calling the subclass's transport)."""
    import inspect

    for name in dir(cls):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(cls, name)
        if inspect.isfunction(attr) and not getattr(attr, "__scrubbed__", False):
            wrapped = scrubbed_errors(attr)
            wrapped.__scrubbed__ = True
            setattr(cls, name, wrapped)
    return cls


_factory_installed = False


def install_log_scrub() -> None:
    """Make every log record of the process scrubbed when it is made: its message (arguments
    merged in) and its exception, so every handler (stderr, files, Dagster's event log and
    compute logs) receives scrubbed text. Idempotent."""
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args, **kwargs):
            record = previous(*args, **kwargs)
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a bad format string is the handler's to report
                return record
            clean = scrub_text(message)
            if clean != message or record.args:
                record.msg, record.args = clean, ()
            if record.exc_info and record.exc_info[1] is not None:
                exc = scrub_exception(record.exc_info[1])
                record.exc_info = (type(exc), exc, record.exc_info[2] if exc is record.exc_info[1] else None)
            return record

        logging.setLogRecordFactory(factory)
        _factory_installed = True
