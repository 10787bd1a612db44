"""Rules for data blocks (OpenCoder's dedicated "data" filters: JSON, YAML, CSV, XML, SQL dumps,
INI/TOML). The composition rules exempt these blocks (``rule_base.DATA_LANGUAGES``); these rules
judge them as data: size, vocabulary, numbers, and bulk records an answer does not need."""

from __future__ import annotations

import re
from collections import Counter
from typing import ClassVar

from .rule_base import Rule, _class_counts, _nonblank

DATA_FILE_LANGUAGES = frozenset({"json", "jsonc", "yaml", "toml", "csv", "xml", "ini", "sql"})
_WORD = re.compile(r"[^\W\d_]{2,}")


class DataRule(Rule):
    """A rule for blocks tagged as a data format (``languages``)."""

    languages: ClassVar[frozenset[str]] = DATA_FILE_LANGUAGES

    def check(self, text: str, language: str | None = None) -> str | None:
        if language not in self.languages:
            return None
        return super().check(text, language)


class DataMaxChars(DataRule):
    """A data block over ``max_chars`` characters (OpenCoder: 5,000): a dump, not an example."""

    name = "data_max_chars"
    defaults = {"max_chars": 20_000}

    def measure(self, text: str) -> float:
        return float(len(text))

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_chars"]


class DataUniqueWords(DataRule):
    """Distinct words under ``min_fraction`` of the words (OpenCoder: 0.4) in a block of at least
    ``min_words`` words: the same records over and over."""

    name = "data_unique_words"
    defaults = {"min_fraction": 0.1, "min_words": 200}

    def applies(self, text: str) -> bool:
        return len(text) >= 2 * self.params["min_words"]

    def measure(self, text: str) -> float:
        ws = _WORD.findall(text.lower())
        if len(ws) < self.params["min_words"]:
            return 1.0
        return len(set(ws)) / len(ws)

    def violates(self, value: float, text: str) -> bool:
        return value < self.params["min_fraction"]


class DataDigitFraction(DataRule):
    """Digits over ``max_fraction`` of a data block of at least ``min_chars``: a numeric table
    (measurements, coordinates, embeddings)."""

    name = "data_digit_fraction"
    defaults = {"max_fraction": 0.5, "min_chars": 500}

    def applies(self, text: str) -> bool:
        return len(text) >= self.params["min_chars"]

    def measure(self, text: str) -> float:
        return _class_counts(text)[2] / len(text) if text else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


class DataDuplicateLines(DataRule):
    """Lines repeated verbatim over ``max_fraction`` of a data block of at least ``min_lines``
    (OpenCoder: 0.7): padding records."""

    name = "data_duplicate_lines"
    defaults = {"max_fraction": 0.7, "min_lines": 20}

    def applies(self, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"]

    def measure(self, text: str) -> float:
        lines = [ln.strip() for ln in _nonblank(text) if len(ln.strip()) > 3]
        if not lines:
            return 0.0
        counts = Counter(lines)
        return sum(c for c in counts.values() if c > 1) / len(lines)

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


class CsvManyRows(DataRule):
    """A CSV/TSV block of over ``max_rows`` rows: a data file pasted whole."""

    name = "csv_many_rows"
    languages = frozenset({"csv"})
    defaults = {"max_rows": 200}

    def applies(self, text: str) -> bool:
        return text.count("\n") >= self.params["max_rows"]

    def measure(self, text: str) -> float:
        return float(len(_nonblank(text)))

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_rows"]


class JsonManyRecords(DataRule):
    """A JSON/YAML block of over ``max_records`` records with the same first key: a table
    exported as objects."""

    name = "json_many_records"
    languages = frozenset({"json", "jsonc", "yaml"})
    defaults = {"max_records": 100}
    _RECORD = re.compile(r'^\s*(?:\{\s*|- )"?([\w$-]+)"?\s*:', re.M)

    def applies(self, text: str) -> bool:
        return text.count("\n") + text.count("{") >= self.params["max_records"]

    def measure(self, text: str) -> float:
        keys = Counter(self._RECORD.findall(text))
        return float(keys.most_common(1)[0][1]) if keys else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_records"]


class SqlInsertDump(DataRule):
    """``INSERT`` statements over ``max_fraction`` of a SQL block of at least ``min_lines``: a
    database dump, not a query."""

    name = "sql_insert_dump"
    languages = frozenset({"sql"})
    defaults = {"max_fraction": 0.8, "min_lines": 20}
    _INSERT = re.compile(r"^\s*(INSERT\s+INTO|\(\s*['\d-])", re.I)

    def applies(self, text: str) -> bool:
        return len(_nonblank(text)) >= self.params["min_lines"]

    def measure(self, text: str) -> float:
        lines = _nonblank(text)
        return sum(1 for ln in lines if self._INSERT.match(ln)) / len(lines) if lines else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > self.params["max_fraction"] and self.applies(text)


class XmlBoilerplate(DataRule):
    """An XML block whose first element is an IDE or build tool's project file (``.idea``,
    ``.csproj`` with generated item groups, Eclipse ``.classpath``): tool state, not a config a
    person writes."""

    name = "xml_tool_state"
    languages = frozenset({"xml"})
    defaults: ClassVar[dict] = {}
    _ROOT = re.compile(r'^\s*(<\?xml[^>]*>\s*)?<(project version="4"|classpath>|module type="[A-Z_]+_MODULE"|'
                       r'component name="ProjectRunConfigurationManager")')

    def measure(self, text: str) -> float:
        return 1.0 if self._ROOT.match(text) else 0.0

    def violates(self, value: float, text: str) -> bool:
        return value > 0


DATA_RULES: tuple[type[Rule], ...] = (DataMaxChars, DataUniqueWords, DataDigitFraction, DataDuplicateLines,
                                      CsvManyRows, JsonManyRecords, SqlInsertDump, XmlBoilerplate)
