"""Pre-flight's pure parts on canned input: the table, the exit code, the offline-mirror marker,
and the org-write and plan rules on whoami answers."""

from surrogate_dagster.operations.preflight import (FAIL, OK, SKIP, Row, _org_write_row, _plan_row, exit_code,
                                                     offline_marked, problems, render_table)

ROWS = [Row("hf.token", "$HF_TOKEN", OK, "valid: user alice"),
        Row("s3.bucket", "bucket @ http://127.0.0.1:9", FAIL, "no such bucket"),
        Row("gpu.cuda", "-", SKIP, "skipped (--skip gpu)")]


def test_table_has_every_row_aligned_and_a_summary():
    text = render_table(ROWS)
    lines = text.splitlines()
    assert lines[0].split() == ["check", "target", "status", "detail"]
    assert lines[1].startswith("-" * len("hf.token"))
    body = lines[2:5]
    assert [line.split()[0] for line in body] == ["hf.token", "s3.bucket", "gpu.cuda"]
    col = lines[0].index("status")
    assert [line[col:col + len(r.status)] for line, r in zip(body, ROWS)] == ["ok", "FAIL", "skip"]
    assert lines[-1] == "1 ok, 1 FAIL, 1 skip"


def test_exit_code_is_nonzero_exactly_when_a_row_failed():
    assert exit_code(ROWS) == 1 and problems(ROWS) == [ROWS[1]]
    assert exit_code([ROWS[0], ROWS[2]]) == 0
    assert exit_code([]) == 0


def test_offline_mirror_marker_is_read_per_entry():
    text = ("sources:\n  - name: a\n    hf_id: o/a\n    revision: " + "1" * 40 + "  # offline-mirror pin, NOT a Hub sha\n"
            "  - name: b\n    hf_id: o/b\n    revision: " + "2" * 40 + "  # main of o/b on 2026-01-01\n")
    assert offline_marked(text, "a") and not offline_marked(text, "b")


def test_org_write_needs_a_write_role_and_a_write_token():
    who = {"name": "alice", "orgs": [{"name": "axentx", "roleInOrg": "read"}]}
    assert _org_write_row(who, "axentx", "alice", "write", {}).status == FAIL
    who["orgs"][0]["roleInOrg"] = "admin"
    assert _org_write_row(who, "axentx", "alice", "write", {}).status == OK
    assert _org_write_row(who, "axentx", "alice", "read", {}).status == FAIL
    assert _org_write_row(who, "other", "alice", "write", {}).status == FAIL
    assert _org_write_row(who, "alice", "alice", "write", {}).status == OK  # the user's own namespace
    fine = {"fineGrained": {"scoped": [{"entity": {"name": "axentx"}, "permissions": ["repo.content.read"]}]}}
    assert _org_write_row(who, "axentx", "alice", "fineGrained", fine).status == FAIL
    fine["fineGrained"]["scoped"][0]["permissions"].append("repo.write")
    assert _org_write_row(who, "axentx", "alice", "fineGrained", fine).status == OK


def test_plan_pro_user_or_paid_org():
    assert _plan_row({"isPro": True}, "axentx", "alice", "pro").status == OK
    free = {"isPro": False, "orgs": [{"name": "axentx"}]}
    assert _plan_row(free, "axentx", "alice", "pro").status == FAIL
    assert _plan_row(free, "axentx", "alice", "free").status == OK
    team = {"isPro": False, "orgs": [{"name": "axentx", "plan": "team"}]}
    assert _plan_row(team, "axentx", "alice", "pro").status == OK


def test_wasabi_is_known_to_refuse_the_abort_rule():
    from surrogate_dagster.operations.preflight import refuses_abort_rule

    assert refuses_abort_rule("https://s3.eu-central-1.wasabisys.com")
    assert not refuses_abort_rule("http://127.0.0.1:9000") and not refuses_abort_rule(None)
    assert not refuses_abort_rule("https://wasabisys.com.evil.example")
