"""Credentials in XML configuration written as name/value pairs rather than as an element named
after the credential: .NET `<add key="X" value="..."/>`, Spring/Ant `<property name="X" value="..."/>`,
`<entry key="X">...</entry>`, `<param name="X">...</param>`, `<setting name="X"><value>...</value>`,
Hadoop/plist child pairs (`<name>X</name><value>...</value>`, `<key>X</key><string>...</string>`), an
element named after the credential holding it in a `value` attribute (`<secret value="..."/>`),
an element named after the credential with its text in one child (`<AdministratorPassword><Value>...`),
the YAML equivalent of Kubernetes/Compose env lists (`- name: DB_PASSWORD` then `value: ...`), and
JSON name/value objects (`{"key": "client_secret", "value": "..."}` in Postman environments,
`{"name": ..., "value": ...}` in ECS task definitions, CloudFormation `ParameterKey`/`ParameterValue`).

The pair counts when its name is a credential name by the assignment detector's rules (the same
keywords, the same non-secret suffixes such as `...Url`/`...Path`) and its value passes the same
value test (placeholders, `${...}` and names of other fields are skipped).
"""
from __future__ import annotations

import re
from typing import Iterator

from .detectors import _KEY_NOT_SECRET, _KW, _NON_SECRET_SUFFIX, Candidate, _value_ok
from .patterns import PASSWORDS

# name attribute and value attribute of one element (either order is not used in practice)
_ATTR_PAIR = re.compile(r"""<[A-Za-z][\w:.-]*\s+(?:[\w:.-]+="[^"\n]*"\s+)*?(?:key|name)\s*=\s*(["'])(?P<k>[^"'\n<>]{1,100})\1"""
                        r"""\s+(?:[\w:.-]+=(["'])[^"'\n]*\3\s+)*?value\s*=\s*(["'])(?P<v>[^"'\n]{0,400})\4""", re.I)
# name attribute, then the element's text (optionally inside a nested <value>)
_ELEM_PAIR = re.compile(r"""<(?P<tag>[A-Za-z][\w:.-]*)\s+(?:key|name)\s*=\s*(["'])(?P<k>[^"'\n<>]{1,100})\2[^<>]*>\s*"""
                        r"""(?:<value>)?(?P<v>[^<\n]{1,400})<""", re.I)
# <name>X</name><value>V</value> (Hadoop *-site.xml), <key>X</key><string>V</string> (plist)
_CHILD_PAIR = re.compile(r"""<(name|key)>\s*(?P<k>[^<>\n]{1,100}?)\s*</\1>\s*<(value|string)>\s*(?P<v>[^<\n]{1,400}?)\s*</\3>""",
                         re.I)
# <secret value="V"/>: the element's own name is the credential name
_TAG_VALUE = re.compile(r"""<(?P<k>[A-Za-z][\w:.-]{0,60})\s(?:[^<>]*?\s)?value\s*=\s*(["'])(?P<v>[^"'\n]{1,400})\2""", re.I)


# YAML `name: X` followed on the next line by `value: V` (same list item)
_YAML_PAIR = re.compile(r"""\bname:[ \t]*(["']?)(?P<k>[A-Za-z_][\w.-]{0,100})\1[ \t]*\r?\n[ \t]+value:[ \t]*"""
                        r"""(?:(["'])(?P<qv>[^"'\n]{1,400})\3|(?P<v>[^\s"'#][^\n]{0,400}?)(?=[ \t]+#|[ \t]*$))""", re.M)


# an element named after the credential whose text sits in one child element: Windows unattend
# `<AdministratorPassword><Value>V</Value>`, plist-like `<password><string>V</string>`
_XML_NESTED = re.compile(r"""<(?P<k>[A-Za-z][\w:.-]{0,60})(?:\s[^<>]*)?>\s*<(?P<c>value|string|plaintext|text|data)>"""
                         r"""\s*(?P<v>[^<\n]{1,400}?)\s*</(?P=c)>""", re.I)
# JSON name/value objects: Postman environments `{"key": X, "value": V}`, ECS task definitions and
# Lambda/Compose env lists `{"name": X, "value": V}`, CloudFormation `{"ParameterKey": X,
# "ParameterValue": V}`; up to three other members may sit between the two
_JSON_PAIR = re.compile(
    r""""(?:key|name|parameterkey|optionname|variable|field|id)"\s*:\s*"(?P<k>[^"\\\n]{1,100})"\s*,\s*"""
    r"""(?:"[\w-]{1,40}"\s*:\s*(?:"[^"\n]{0,200}"|true|false|null|-?\d+)\s*,\s*){0,3}"""
    r""""(?:value|parametervalue|defaultvalue|default|val|secret)"\s*:\s*"(?P<v>(?:[^"\\\n]|\\.){1,400})(?=")""", re.I)



def _credential_name(name: str) -> bool | None:
    """True: a password-like name; False: a token/key-like name; None: not a credential name."""
    last = re.split(r"[.:/]", name)[-1] or name
    m = None
    for m in _KW.finditer(last):
        pass  # the last keyword in the name decides (`jwt.signing.secret`, `StripeApiKey`)
    if m is None or _NON_SECRET_SUFFIX.search(last) or _KEY_NOT_SECRET.match(last.lstrip("_.-")):
        return None
    if m.group(3) is not None and last[m.end():].strip("0123456789"):
        return None  # `keyStore`, `KeyFile`: `key` must end the name
    return m.group(1) is not None


def _named_values(rx: re.Pattern, text: str, rule: str) -> Iterator[Candidate]:
    """The `v` group of each `rx` match whose `k` group is a credential name and whose value passes."""
    for m in rx.finditer(text):
        strong = _credential_name(m.group("k"))
        v = m.group("v")
        if strong is not None and v and _value_ok(v, strong, True):
            yield Candidate(m.start("v"), m.end("v"), PASSWORDS, "SECRET_PASSWORD" if strong else "SECRET_TOKEN", rule, 2)


def detect_config_pairs(text: str, lower: str) -> Iterator[Candidate]:
    """Name/value XML, YAML and JSON configuration entries whose name is a credential name."""
    if "name:" in lower and "value:" in lower:
        for m in _YAML_PAIR.finditer(text):
            strong = _credential_name(m.group("k"))
            if strong is None:
                continue
            g = "qv" if m.group("qv") is not None else "v"
            v = m.group(g).strip()
            if v and _value_ok(v, strong, g == "qv"):
                s = m.start(g)
                yield Candidate(s, s + len(v), PASSWORDS, "SECRET_PASSWORD" if strong else "SECRET_TOKEN",
                                "yaml_name_value", 2)
    if "\"" in text and "value\"" in lower:
        yield from _named_values(_JSON_PAIR, text, "json_name_value")
    if "<" not in text:
        return
    yield from _named_values(_XML_NESTED, text, "xml_nested_value")
    if "key" not in lower and "name" not in lower and "value" not in lower:
        return
    for rx in (_ATTR_PAIR, _ELEM_PAIR, _CHILD_PAIR, _TAG_VALUE):
        for m in rx.finditer(text):
            strong = _credential_name(m.group("k"))
            if strong is None:
                continue
            v = m.group("v").strip()
            if v and _value_ok(v, strong, True):
                s = text.index(v, m.start("v"))
                yield Candidate(s, s + len(v), PASSWORDS, "SECRET_PASSWORD" if strong else "SECRET_TOKEN",
                                "xml_name_value", 2)
