"""Settings read from the environment: defaults come from ragpulse.config.defaults, values parse as their field's type."""

from __future__ import annotations

import pytest

from ragpulse.config import defaults
from ragpulse.exceptions import ConfigError
from ragpulse.config.settings import Settings


def test_an_empty_environment_gives_the_field_defaults() -> None:
    # from_env holds no defaults of its own: with nothing set, every field is the dataclass's (defaults.py's).
    assert Settings.from_env({}) == Settings()
    assert Settings().redis_url == defaults.REDIS_URL and Settings().default_judge == defaults.JUDGE
    assert Settings.from_env({"ANTHROPIC_API_KEY": "k"}).default_judge == defaults.JUDGE_WITH_API_KEY


def test_the_judge_timeout_is_a_float() -> None:
    assert Settings.from_env({"RAGPULSE_JUDGE_TIMEOUT_SECONDS": "2.5"}).judge_timeout_seconds == 2.5
    assert Settings.from_env({"RAGPULSE_JUDGE_TIMEOUT_SECONDS": "90"}).judge_timeout_seconds == 90.0
    for bad in ("soon", "0", "-1"):
        with pytest.raises(ConfigError, match="RAGPULSE_JUDGE_TIMEOUT_SECONDS"):
            Settings.from_env({"RAGPULSE_JUDGE_TIMEOUT_SECONDS": bad})


def test_comma_separated_lists_set_but_empty_are_empty() -> None:
    settings = Settings.from_env({"RAGPULSE_APPS": "", "RAGPULSE_CALLBACK_RETRY_SECONDS": ""})
    assert settings.apps == frozenset() and settings.callback_retry_seconds == ()
    listed = Settings.from_env({"RAGPULSE_APPS": "chat, search", "RAGPULSE_CALLBACK_RETRY_SECONDS": "1,2"})
    assert listed.apps == {"chat", "search"} and listed.callback_retry_seconds == (1, 2)


def test_the_metrics_token_comes_from_the_variable_or_its_file(tmp_path) -> None:
    assert Settings.from_env({}).metrics_token is None
    assert Settings.from_env({"RAGPULSE_METRICS_TOKEN": "tok"}).metrics_token == "tok"
    token = tmp_path / "token"
    token.write_text("from-file\n")
    assert Settings.from_env({"RAGPULSE_METRICS_TOKEN_FILE": str(token)}).metrics_token == "from-file"
    token.write_text(" \n")
    with pytest.raises(ConfigError, match="is empty"):
        Settings.from_env({"RAGPULSE_METRICS_TOKEN_FILE": str(token)})
    with pytest.raises(ConfigError, match="cannot read"):
        Settings.from_env({"RAGPULSE_METRICS_TOKEN_FILE": str(tmp_path / "missing")})


def test_metric_tenants_are_the_api_keys_tenants_or_default_when_open() -> None:
    from service.auth import OPEN_TENANT

    assert OPEN_TENANT == defaults.OPEN_TENANT          # the tenant an open API gives every request
    assert Settings.from_env({"RAGPULSE_API_KEYS": "acme:k1,globex:k2,acme:k3"}).tenants == {"acme", "globex"}
    assert Settings.from_env({}).tenants == {defaults.OPEN_TENANT}


def test_the_ingest_burst_must_hold_a_full_batch_unless_the_limit_is_off() -> None:
    settings = Settings.from_env({})
    assert (settings.tenant_traces_per_second, settings.tenant_traces_burst) == (
        defaults.TENANT_TRACES_PER_SECOND, defaults.TENANT_TRACES_BURST)
    assert 0 < defaults.TENANT_TRACES_PER_SECOND and defaults.TENANT_TRACES_BURST >= defaults.MAX_TRACES_PER_BATCH
    with pytest.raises(ConfigError, match="RAGPULSE_TENANT_TRACES_BURST"):
        Settings.from_env({"RAGPULSE_MAX_TRACES": "50000"})
    assert Settings.from_env({"RAGPULSE_MAX_TRACES": "50000", "RAGPULSE_TENANT_TRACES_BURST": "50000"})
    assert Settings.from_env({"RAGPULSE_MAX_TRACES": "50000", "RAGPULSE_TENANT_TRACES_PER_SECOND": "0"})
    with pytest.raises(ConfigError, match="RAGPULSE_TENANT_TRACES_PER_SECOND"):
        Settings.from_env({"RAGPULSE_TENANT_TRACES_PER_SECOND": "-1"})


def test_judge_concurrency_is_from_1_to_1024() -> None:
    assert Settings.from_env({"RAGPULSE_JUDGE_CONCURRENCY": "1"}).judge_concurrency == 1
    assert Settings.from_env({"RAGPULSE_JUDGE_CONCURRENCY": "1024"}).judge_concurrency == 1024
    for bad, reason in (("0", "positive"), ("-3", "positive"), ("1025", "at most 1,024"), ("abc", "an integer")):
        with pytest.raises(ConfigError, match=f"RAGPULSE_JUDGE_CONCURRENCY must be {reason}"):
            Settings.from_env({"RAGPULSE_JUDGE_CONCURRENCY": bad})


def test_review_loop_settings_are_read_and_checked() -> None:
    settings = Settings.from_env({"RAGPULSE_LABEL_TTL_DAYS": "10", "RAGPULSE_AGREEMENT_WINDOW_DAYS": "7",
                                  "RAGPULSE_REVIEW_SAMPLE_RATE": "0.25", "RAGPULSE_REVIEW_TEXT_TTL_SECONDS": "3600"})
    assert (settings.label_ttl_seconds, settings.agreement_window_days) == (864000, 7)
    assert (settings.review_sample_rate, settings.review_text_ttl_seconds) == (0.25, 3600)
    with pytest.raises(ConfigError, match="RAGPULSE_AGREEMENT_WINDOW_DAYS"):
        Settings.from_env({"RAGPULSE_LABEL_TTL_DAYS": "10", "RAGPULSE_AGREEMENT_WINDOW_DAYS": "30"})
    with pytest.raises(ConfigError, match="RAGPULSE_REVIEW_SAMPLE_RATE"):
        Settings.from_env({"RAGPULSE_REVIEW_SAMPLE_RATE": "1.5"})


def test_connection_bounds_are_read_and_must_be_positive() -> None:
    settings = Settings.from_env({})
    assert (settings.head_timeout_seconds, settings.max_connections, settings.max_connections_per_address,
            settings.max_inflight_body_bytes) == (defaults.HEAD_TIMEOUT_SECONDS, defaults.MAX_CONNECTIONS,
                                                  defaults.MAX_CONNECTIONS_PER_ADDRESS, defaults.MAX_INFLIGHT_BODY_BYTES)
    set_ = Settings.from_env({"RAGPULSE_HEAD_TIMEOUT_SECONDS": "2.5", "RAGPULSE_MAX_CONNECTIONS": "50",
                              "RAGPULSE_MAX_CONNECTIONS_PER_ADDRESS": "5", "RAGPULSE_MAX_INFLIGHT_BODY_BYTES": "1000"})
    assert (set_.head_timeout_seconds, set_.max_connections, set_.max_connections_per_address,
            set_.max_inflight_body_bytes) == (2.5, 50, 5, 1000)
    for name in ("RAGPULSE_HEAD_TIMEOUT_SECONDS", "RAGPULSE_MAX_CONNECTIONS", "RAGPULSE_MAX_CONNECTIONS_PER_ADDRESS",
                 "RAGPULSE_MAX_INFLIGHT_BODY_BYTES"):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({name: "0"})
