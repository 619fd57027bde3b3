"""The control socket: JSON-line requests, errors carried across with their codes, socket placement."""

from __future__ import annotations

import json
import os
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.waiting import DEADLINE_S

from dory.config import Settings, load_settings
from dory.daemon.control import ControlServer
from dory.errors import DaemonNotRunning, DaemonTimeout, DoryError, NotFound, UsageError
from dory.service.control import call, socket_path
from dory.service.writes import WriterCall
from dory.statefolder import MAX_SOCKET_PATH


def make_settings(root: Path, **overrides: Any) -> Settings:
    return load_settings(root, overrides, env={})


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """pytest's tmp_path can be long; a socket needs a short one to sit beside the state."""
    with tempfile.TemporaryDirectory(prefix="dory-t-") as folder:
        yield Path(folder)


@pytest.fixture
def settings(short_tmp: Path) -> Settings:
    corpus = short_tmp / "c"
    corpus.mkdir()
    return make_settings(corpus, state_dir=str(short_tmp / "s"))


def boom_not_found(args: dict[str, Any]) -> Any:
    raise NotFound(f"no note {args['path']!r}", path=args["path"], extra=[1, 2])


def boom_value(args: dict[str, Any]) -> Any:
    raise ValueError("bad value")


def strict_write(args: dict[str, Any]) -> Any:
    return WriterCall.model_validate(args)  # the daemon's write handler validates like this


HANDLERS = {"echo": lambda args: {"got": args}, "missing": boom_not_found, "crash": boom_value, "write": strict_write}


def start_fast(srv: ControlServer) -> ControlServer:
    """ControlServer.start(), with a short shutdown poll so stop() does not wait half a second per test."""
    srv._thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    srv.start()
    return srv


@pytest.fixture
def server(settings: Settings) -> Iterator[ControlServer]:
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    srv = start_fast(ControlServer(socket_path(settings), dict(HANDLERS)))
    yield srv
    srv.stop()


def raw_request(path: Path, payload: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(DEADLINE_S)
        sock.connect(str(path))
        sock.sendall(payload)
        with sock.makefile("rb") as stream:
            return json.loads(stream.readline())


# Calls that must be answered pass DEADLINE_S: the default timeout (5 s) would be a speed bound.
def test_call_returns_the_handler_result(settings: Settings, server: ControlServer) -> None:
    assert call(settings, "echo", {"a": 1, "b": ["ü"]}, DEADLINE_S) == {"got": {"a": 1, "b": ["ü"]}}
    assert call(settings, "echo", timeout_s=DEADLINE_S) == {"got": {}}


def test_concurrent_calls(settings: Settings, server: ControlServer) -> None:
    results: list[Any] = [None] * 32

    def ask(n: int) -> None:
        try:
            results[n] = call(settings, "echo", {"n": n}, timeout_s=DEADLINE_S)
        except Exception as exc:  # shown in the assertion below
            results[n] = exc

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
    assert results == [{"got": {"n": n}} for n in range(32)]  # more clients than the default backlog of 5


def test_dory_error_is_re_raised_with_code_message_and_details(settings: Settings, server: ControlServer) -> None:
    with pytest.raises(NotFound) as info:
        call(settings, "missing", {"path": "x.md"}, DEADLINE_S)
    assert info.value.code == "not_found"
    assert info.value.message == "no note 'x.md'"
    assert info.value.details == {"path": "x.md", "extra": [1, 2]}
    assert info.value.to_dict() == {
        "code": "not_found",
        "message": "no note 'x.md'",
        "type": "NotFound",
        "details": {"path": "x.md", "extra": [1, 2]},
    }


def test_generic_exception_becomes_internal_error(settings: Settings, server: ControlServer) -> None:
    with pytest.raises(DoryError) as info:
        call(settings, "crash", timeout_s=DEADLINE_S)
    assert type(info.value) is DoryError
    assert info.value.code == "internal_error"
    assert info.value.message == "the daemon failed to handle the request: bad value"
    # the server survives and keeps answering
    assert call(settings, "echo", {"x": 1}, DEADLINE_S) == {"got": {"x": 1}}


def test_an_unexpected_failure_is_kept_as_the_control_parts_last_error(
    settings: Settings, server: ControlServer
) -> None:
    """Issue 15, item 8: `dory status` shows each part's last error with its time; an answered
    usage error is the caller's problem, not the daemon's, and is not kept."""
    with pytest.raises(UsageError):
        call(settings, "no-such-op", timeout_s=DEADLINE_S)
    assert server.health.last_error is None
    with pytest.raises(DoryError):
        call(settings, "crash", timeout_s=DEADLINE_S)  # the error is kept before the answer is sent
    assert server.health.last_error == "a control request failed: ValueError: bad value"
    assert server.health.last_error_at


def test_a_request_that_does_not_fit_its_model_is_a_usage_error(settings: Settings, server: ControlServer) -> None:
    with pytest.raises(UsageError) as info:
        call(settings, "write", {"operation": {"op": "write", "request": {"path": "a.md"}}})
    assert info.value.code == "usage_error" and "operation.write.request.kind" in info.value.message


def test_a_write_whose_frontmatter_nests_too_deep_is_a_usage_error(settings: Settings, server: ControlServer) -> None:
    deep: dict[str, Any] = {"leaf": 1}
    for _ in range(40):
        deep = {"a": deep}
    request = {"path": "a.md", "kind": "create", "content": "hi", "frontmatter": deep}
    with pytest.raises(UsageError) as info:
        call(settings, "write", {"operation": {"op": "write", "request": request}}, DEADLINE_S)
    assert info.value.code == "usage_error" and "nested deeper than 32 levels" in info.value.message


def test_unknown_op_is_a_usage_error(settings: Settings, server: ControlServer) -> None:
    with pytest.raises(UsageError) as info:
        call(settings, "nope", timeout_s=DEADLINE_S)
    assert info.value.code == "usage_error"
    assert info.value.message == "unknown control operation 'nope'"
    assert info.value.details == {"op": "nope"}


@pytest.mark.parametrize(
    ("payload", "message_start"),
    [
        (b"not json\n", "control request is not JSON: "),
        (b"\n", "control request is not JSON: "),
        (b"[1, 2]\n", 'a control request is {"op": NAME, "args": {...}}'),
        (b'"echo"\n', 'a control request is {"op": NAME, "args": {...}}'),
        (b'{"args": {}}\n', 'a control request is {"op": NAME, "args": {...}}'),
        (b'{"op": 5}\n', 'a control request is {"op": NAME, "args": {...}}'),
        (b'{"op": "nope"}\n', "unknown control operation 'nope'"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "control request is not JSON: nested too deeply to parse"),
    ],
)
def test_malformed_requests_get_usage_error(server: ControlServer, payload: bytes, message_start: str) -> None:
    reply = raw_request(server.path, payload)
    assert set(reply) == {"error"}
    assert reply["error"]["code"] == "usage_error"
    assert reply["error"]["message"].startswith(message_start)


def test_raw_request_without_args(server: ControlServer) -> None:
    assert raw_request(server.path, b'{"op": "echo"}\n') == {"result": {"got": {}}}
    assert raw_request(server.path, b'{"op": "echo", "args": null}\n') == {"result": {"got": {}}}


def test_no_server_is_daemon_not_running(settings: Settings) -> None:
    assert not socket_path(settings).exists()
    with pytest.raises(DaemonNotRunning) as info:
        call(settings, "echo")
    assert info.value.code == "daemon_not_running"


def test_stale_socket_file_is_daemon_not_running(settings: Settings) -> None:
    path = socket_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays; nobody listens
    assert path.exists()
    with pytest.raises(DaemonNotRunning):
        call(settings, "echo")


def test_silent_server_times_out_as_daemon_timeout(settings: Settings) -> None:
    path = socket_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(path))
        mute.listen(1)  # accepts into the backlog, never answers
        with pytest.raises(DaemonTimeout, match=r"did not answer 'echo' within 0\.1 s"):
            call(settings, "echo", timeout_s=0.1)


def test_server_closing_after_reading_is_daemon_not_running(settings: Settings) -> None:
    path = socket_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as rude:
        rude.bind(str(path))
        rude.listen(1)

        def hang_up() -> None:
            conn, _ = rude.accept()
            with conn, conn.makefile("rb") as stream:
                stream.readline()  # reads the request, then hangs up without an answer

        thread = threading.Thread(target=hang_up)
        thread.start()
        with pytest.raises(DaemonNotRunning, match="closed the connection"):
            call(settings, "echo", timeout_s=DEADLINE_S)  # the hang-up ends the call, not the timeout
        thread.join(DEADLINE_S)


def test_server_resetting_the_connection_is_daemon_not_running(settings: Settings) -> None:
    path = socket_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as rude:
        rude.bind(str(path))
        rude.listen(1)

        def hang_up() -> None:
            conn, _ = rude.accept()
            conn.close()  # without reading: unread data makes the kernel reset the connection

        thread = threading.Thread(target=hang_up)
        thread.start()
        try:
            with pytest.raises(DaemonNotRunning, match=r"dropped the connection|closed the connection"):
                call(settings, "echo", timeout_s=DEADLINE_S)  # the reset ends the call, not the timeout
        finally:
            thread.join(DEADLINE_S)


def test_socket_sits_beside_the_state_with_mode_0600(settings: Settings, server: ControlServer) -> None:
    path = socket_path(settings)
    assert path == settings.state_dir / "daemon.sock"
    assert server.path == path
    mode = os.stat(path).st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


def test_stop_removes_the_socket(settings: Settings) -> None:
    settings.state_dir.mkdir(parents=True)
    srv = ControlServer(socket_path(settings), {})
    srv.start()
    assert srv.path.exists()
    srv.stop()
    assert not srv.path.exists()
    with pytest.raises(DaemonNotRunning):
        call(settings, "echo")


def test_server_replaces_a_leftover_socket_file(settings: Settings) -> None:
    path = socket_path(settings)
    path.parent.mkdir(parents=True)
    path.write_text("left by a dead daemon")
    srv = start_fast(ControlServer(path, dict(HANDLERS)))
    try:
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        assert call(settings, "echo", timeout_s=DEADLINE_S) == {"got": {}}
    finally:
        srv.stop()


def test_long_state_dir_falls_back_to_the_temp_folder(short_tmp: Path) -> None:
    corpus = short_tmp / "c"
    corpus.mkdir()
    deep = short_tmp / ("d" * 60) / ("e" * 60)
    settings = make_settings(corpus, state_dir=str(deep))
    assert len(os.fsencode(deep / "daemon.sock")) > MAX_SOCKET_PATH
    path = socket_path(settings)
    assert path.parent == Path(tempfile.gettempdir())
    assert path.name.startswith(f"dory-{os.getuid()}-") and path.suffix == ".sock"
    assert len(os.fsencode(path)) <= MAX_SOCKET_PATH
    assert socket_path(make_settings(corpus, state_dir=str(deep))) == path  # stable
    other = make_settings(corpus, state_dir=str(short_tmp / ("d" * 60) / ("f" * 60)))
    assert socket_path(other) != path  # one socket per state folder
    srv = start_fast(ControlServer(path, dict(HANDLERS)))
    try:
        assert call(settings, "echo", {"deep": True}, DEADLINE_S) == {"got": {"deep": True}}
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    finally:
        srv.stop()
    assert not path.exists()
