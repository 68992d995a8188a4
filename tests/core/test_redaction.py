"""Credentials in URLs: found in each form, hidden wherever shown, refused where Inspect would record them."""

from __future__ import annotations

import pytest

from mara_bench.harness.redaction import (
    credential_forms,
    credential_problem,
    redact_record,
    redact_text,
    redact_url,
)
from mara_bench.harness.toolbase.settings import ToolConfigError, ToolSettings
from mara_bench.leaderboards.suite import SuiteError, parse_suite


@pytest.mark.parametrize(
    ("url", "forms", "shown"),
    [
        ("http://user:TOKEN@host/x", ["user:password"], "http://***@host/x"),
        ("s3://TOKEN@bucket/tools", ["user:password"], "s3://***@bucket/tools"),
        ("https://h/search?q=a&key=TOKEN", ["?key="], "https://h/search?q=a&key=***"),
        ("https://h/x?API_KEY=TOKEN&sig=TOKEN", ["?API_KEY=", "?sig="], "https://h/x?API_KEY=***&sig=***"),
        ("https://h/x?q=key", [], "https://h/x?q=key"),
        ("/data/tool-store", [], "/data/tool-store"),
    ],
)
def test_each_credential_form_is_found_and_hidden(url, forms, shown):
    assert credential_forms(url) == forms
    assert redact_url(url) == shown
    assert "TOKEN" not in redact_text(f"tool store {url}: not found")


def test_a_record_hides_urls_and_secret_keys_at_any_depth():
    config = {"grader": {"base_url": "http://u:TOKEN@h/v1", "api_key": "TOKEN", "model": "m"}, "n": [1, None]}
    assert "TOKEN" not in str(redact_record(config))
    assert redact_record(config)["grader"]["model"] == "m" and redact_record(config)["n"] == [1, None]


@pytest.mark.parametrize("name", ["tool_store", "serper_url", "serpapi_url", "openalex_url"])
def test_tool_settings_refuse_a_url_with_a_credential_in_one_line_without_it(name):
    with pytest.raises(ToolConfigError, match=f"tool settings: {name}: .*carries a credential") as caught:
        ToolSettings.from_options({name: "https://user:TOKEN@h/x?key=TOKEN"})
    assert "TOKEN" not in str(caught.value) and "\n" not in str(caught.value)
    assert credential_problem("https://h/x") is None


def test_a_suite_refuses_credentials_in_model_args_and_the_tool_store(tmp_path):
    base = {
        "name": "s",
        "checkpoints": [
            {"name": "c", "model": "mockllm/model", "model_args": {"base_url": "http://u:TOKEN@h/v1"}}
        ],
        "tasks": [{"task": "tasks/qa.py@bamboogle"}],
    }
    with pytest.raises(
        SuiteError, match=r"checkpoints\[0\].model_args.base_url: .*carries a credential"
    ) as caught:
        parse_suite(base)
    assert "TOKEN" not in str(caught.value)
    base["checkpoints"][0]["model_args"] = {}
    base["settings"] = {"tools": {"snapshot": "w", "store": "s3://bucket/t?token=TOKEN"}}
    with pytest.raises(SuiteError, match=r"settings.tools.store: .*carries a credential") as caught:
        parse_suite(base)
    assert "TOKEN" not in str(caught.value)
