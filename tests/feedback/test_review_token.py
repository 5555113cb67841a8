"""admin.review_token / review_token_file: validated with errors naming the key, read at start."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from monitor.admin.config import AdminConfig
from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.errors import SecretFileError
from tests.feedback.harness import feedback_config
from tests.support.judge_server import unused_base_url
from tests.support.pipeline import RecordingSink


def test_the_write_token_must_differ_from_the_read_token_and_come_from_one_place(tmp_path) -> None:
    with pytest.raises(ValueError, match="admin.review_token: must differ from admin.bearer_token") as err:
        MonitorConfig.model_validate({"admin": {"bearer_token": "same", "review_token": "same"}})
    assert "same" not in str(err.value)  # a secret is never echoed
    with pytest.raises(ValueError, match="either review_token or review_token_file"):
        AdminConfig.model_validate({"review_token": "a", "review_token_file": str(tmp_path / "t")})
    with pytest.raises(ValueError, match="review_token"):
        AdminConfig.model_validate({"review_token": ""})


@pytest.mark.parametrize(("content", "message"), [
    (None, "admin.review_token_file: cannot read"),
    ("  \n", "admin.review_token_file: .* is empty"),
    ("reader\n", "admin.review_token_file: holds admin.bearer_token"),
])
def test_a_bad_review_token_file_is_a_config_error_naming_the_key(tmp_path, content, message) -> None:
    path = tmp_path / "review-token"
    if content is not None:
        path.write_text(content)
    config = AdminConfig.model_validate({"bearer_token": "reader", "review_token_file": str(path)})
    with pytest.raises(SecretFileError, match=message):
        config.resolve_review_token()


async def test_the_sidecar_does_not_start_with_an_unreadable_review_token_file(tmp_path) -> None:
    config = feedback_config(unused_base_url(), admin={"review_token_file": str(tmp_path / "missing")})
    sidecar = Sidecar(config, sink=RecordingSink(), registry=CollectorRegistry())
    with pytest.raises(SecretFileError, match="admin.review_token_file"):
        await sidecar.start()
    await sidecar.shutdown()
